// The page of each kind of experiment that is not a diff: every kind_<name>.ts registers its
// view here when the bundle loads (scripts/web.sh bundles every kind_*.ts file), and the
// summary view looks it up by the document's kind. A new kind adds its file and nothing else.
import type { PlotHandle } from "./plots";

export type KindView<T> = (root: HTMLElement, body: T) => PlotHandle[] | void;

const VIEWS = new Map<string, KindView<never>>();

export function registerKindView<T>(kind: string, view: KindView<T>): void {
  VIEWS.set(kind, view as KindView<never>);
}

export function kindView(kind: string): KindView<never> | undefined {
  return VIEWS.get(kind);
}
