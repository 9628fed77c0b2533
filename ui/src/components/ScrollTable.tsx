import type { ReactNode } from "react";

/**
 * The container of a table that may be wider than the screen: it scrolls sideways by itself
 * with the first column fixed (styles.css), and is a focusable region named `label`, so a
 * keyboard reaches what is scrolled out of sight and a screen reader says what it holds.
 */
export function ScrollTable({
  label,
  minWidth,
  children,
  testId,
}: {
  label: string;
  minWidth?: number;
  children: ReactNode;
  testId?: string;
}) {
  return (
    <div className="scroll-table" role="region" aria-label={label} tabIndex={0} data-testid={testId}>
      <div className="scroll-table-inner" style={minWidth ? { minWidth } : undefined}>
        {children}
      </div>
    </div>
  );
}
