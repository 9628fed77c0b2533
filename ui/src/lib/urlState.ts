// A list's filters, search, sort and page kept in the query string, so Back/Forward and a
// reload restore them and a URL can be shared. Each change of filters is a history entry;
// typing in a search box replaces the current one (one entry per search, not per key).
//
// Pages are keyset cursors: the cursors that led to the page shown are kept as repeated
// `after` parameters, so "previous" goes back exactly and the page number is their count + 1.

import { useDebouncedValue } from "@mantine/hooks";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useSearchParams } from "react-router";

export type UrlValue = string | string[] | null | undefined;

const PAGE = "after";

/** Writes `changes` into `params`: lists comma-joined, empty values removed. */
export function applyChanges(params: URLSearchParams, changes: Record<string, UrlValue>): URLSearchParams {
  const next = new URLSearchParams(params);
  for (const [name, value] of Object.entries(changes)) {
    const text = Array.isArray(value) ? value.join(",") : (value ?? "");
    if (text === "") next.delete(name);
    else next.set(name, text);
  }
  return next;
}

export function useUrlState() {
  const [params, setParams] = useSearchParams();

  const get = useCallback((name: string): string => params.get(name) ?? "", [params]);
  const getList = useCallback(
    (name: string): string[] => (params.get(name) ?? "").split(",").filter(Boolean),
    [params],
  );

  /** Changes filters; the list starts again at its first page. */
  const set = useCallback(
    (changes: Record<string, UrlValue>, options: { replace?: boolean } = {}) =>
      setParams(
        (current) => {
          const next = applyChanges(current, changes);
          next.delete(PAGE);
          return next;
        },
        { replace: options.replace ?? false },
      ),
    [setParams],
  );

  const clear = useCallback(() => setParams(new URLSearchParams()), [setParams]);

  const cursors = useMemo(() => params.getAll(PAGE), [params]);
  const keyset = useMemo(
    () => ({
      cursor: cursors[cursors.length - 1] as string | undefined,
      page: cursors.length + 1,
      next: (cursor: string) =>
        setParams((current) => {
          const next = new URLSearchParams(current);
          next.append(PAGE, cursor);
          return next;
        }),
      previous: () =>
        setParams((current) => {
          const next = new URLSearchParams(current);
          const kept = next.getAll(PAGE).slice(0, -1);
          next.delete(PAGE);
          for (const c of kept) next.append(PAGE, c);
          return next;
        }),
    }),
    [cursors, setParams],
  );

  /** The query string without the page: what a query key depends on besides the cursor. */
  const filterKey = useMemo(() => {
    const copy = new URLSearchParams(params);
    copy.delete(PAGE);
    copy.sort();
    return copy.toString();
  }, [params]);

  return { get, getList, set, clear, keyset, filterKey };
}

export type UrlKeyset = ReturnType<typeof useUrlState>["keyset"];

/**
 * A text box bound to one parameter: what is typed shows at once and reaches the URL after
 * a pause (replacing the current entry); a URL changed from outside (Back, Clear) shows again.
 */
export function useUrlText(
  url: Pick<ReturnType<typeof useUrlState>, "get" | "set">,
  name: string,
  delay = 300,
): [string, (text: string) => void] {
  const value = url.get(name);
  const [text, setText] = useState(value);
  const [debounced] = useDebouncedValue(text, delay);
  useEffect(() => setText(value), [value]);
  const { set } = url;
  useEffect(() => {
    if (debounced.trim() !== value) set({ [name]: debounced.trim() }, { replace: true });
    // Only a new pause in typing writes: the URL's own changes arrive through `value`.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debounced]);
  return [text, setText];
}
