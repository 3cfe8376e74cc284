// A list of many rows of one fixed height that keeps only the rows in view (and a few around them) in
// the DOM: 1,000 runs or a 10,000-event log scroll as fast as ten. Fixed heights also mean nothing
// moves while rows update.

/**
 * Where a navigation key moves the selection of a list of `count` rows of `rowHeight` in a view of
 * `viewHeight`, from `at`: arrows and j/k one row, Page Up/Down a view, Home/End the ends. Undefined
 * for any other key.
 */
export function keyTarget(
  key: string,
  at: number,
  count: number,
  viewHeight: number,
  rowHeight: number,
): number | undefined {
  const page = Math.max(1, Math.floor(viewHeight / rowHeight) - 1);
  switch (key) {
    case "ArrowDown":
    case "j":
      return at + 1;
    case "ArrowUp":
    case "k":
      return at - 1;
    case "PageDown":
      return at + page;
    case "PageUp":
      return at - page;
    case "Home":
      return 0;
    case "End":
      return count - 1;
    default:
      return undefined;
  }
}

/** Options of {@link VirtualList}. */
export interface VirtualListOptions<T> {
  /** The scrolling element (its height comes from the layout). */
  scroller: HTMLElement;
  /** Height of every row. @unit px */
  rowHeight: number;
  /** Fills a pooled row element for `item`; called whenever the item or the window changes. */
  render: (element: HTMLElement, item: T, index: number, selected: boolean) => void;
  /** A new pooled row element. */
  create: () => HTMLElement;
  /** Rows rendered beyond each edge of the view. @default 8 */
  overscan?: number;
}

/** The virtualised list. */
export class VirtualList<T> {
  readonly #options: VirtualListOptions<T>;
  readonly #spacer: HTMLElement;
  readonly #pool: HTMLElement[] = [];
  #items: readonly T[] = [];
  #selected = -1;
  #scheduled = false;

  constructor(options: VirtualListOptions<T>) {
    this.#options = options;
    this.#spacer = document.createElement("div");
    this.#spacer.className = "vl-spacer";
    options.scroller.append(this.#spacer);
    options.scroller.addEventListener("scroll", () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(options.scroller);
  }

  /** The items shown. */
  get items(): readonly T[] {
    return this.#items;
  }

  /** Index of the selected row, -1 for none. */
  get selected(): number {
    return this.#selected;
  }

  /** Replaces the items (the same array may be passed again after it changed). */
  setItems(items: readonly T[]): void {
    this.#items = items;
    if (this.#selected >= items.length) this.#selected = items.length - 1;
    this.schedule();
  }

  /** Selects row `index` (clamped) and scrolls it into view. */
  select(index: number): void {
    if (this.#items.length === 0) return;
    this.#selected = Math.max(0, Math.min(this.#items.length - 1, index));
    this.scrollIntoView(this.#selected);
    this.schedule();
  }

  /** True when the view shows the last row (a log that follows new rows keeps following). */
  atEnd(): boolean {
    const { scroller } = this.#options;
    return scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - this.#options.rowHeight;
  }

  /** Scrolls so that the last row is in view. */
  scrollToEnd(): void {
    this.#spacer.style.height = `${this.#items.length * this.#options.rowHeight}px`;
    this.#options.scroller.scrollTop = this.#options.scroller.scrollHeight;
    this.schedule();
  }

  /** Scrolls so that row `index` is in view. */
  scrollIntoView(index: number): void {
    const { scroller, rowHeight } = this.#options;
    this.#spacer.style.height = `${this.#items.length * rowHeight}px`;
    const top = index * rowHeight;
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + rowHeight > scroller.scrollTop + scroller.clientHeight)
      scroller.scrollTop = top + rowHeight - scroller.clientHeight;
  }

  /** Renders on the next animation frame (many updates in one frame render once). */
  schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      this.render();
    });
  }

  /** Renders the rows in view now. */
  render(): void {
    const { scroller, rowHeight, overscan = 8 } = this.#options;
    const count = this.#items.length;
    this.#spacer.style.height = `${count * rowHeight}px`;
    const first = Math.max(0, Math.floor(scroller.scrollTop / rowHeight) - overscan);
    const last = Math.min(
      count,
      Math.ceil((scroller.scrollTop + scroller.clientHeight) / rowHeight) + overscan,
    );
    const needed = Math.max(0, last - first);
    while (this.#pool.length < needed) {
      const row = this.#options.create();
      row.style.position = "absolute";
      row.style.height = `${rowHeight}px`;
      row.style.top = "0";
      row.style.left = "0";
      row.style.right = "0";
      this.#pool.push(row);
      scroller.append(row);
    }
    for (let i = 0; i < this.#pool.length; i += 1) {
      const row = this.#pool[i]!;
      const index = first + i;
      if (i >= needed) {
        row.hidden = true;
        continue;
      }
      row.hidden = false;
      row.style.transform = `translateY(${index * rowHeight}px)`;
      row.dataset.index = String(index);
      this.#options.render(row, this.#items[index]!, index, index === this.#selected);
    }
  }
}
