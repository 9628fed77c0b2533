import { Select } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, payload } from "../api/client";
import { useI18n } from "../lib/context";
import { formatRut } from "../lib/rut";

export function useCommerces() {
  return useQuery({ queryKey: ["commerces"], queryFn: () => payload(api.GET("/commerces")), staleTime: 30_000 });
}

/** A filter on one commerce (empty: all). */
export function CommerceSelect({ value, onChange }: { value: string | null; onChange: (v: string | null) => void }) {
  const { t } = useI18n();
  const commerces = useCommerces();
  return (
    <Select
      label={t("common.commerce")}
      placeholder={t("common.all")}
      clearable
      data={(commerces.data?.items ?? []).map((c) => ({ value: c.code, label: `${c.name} (${formatRut(c.code)})` }))}
      value={value}
      onChange={onChange}
      w={{ base: "100%", sm: 320 }}
    />
  );
}
