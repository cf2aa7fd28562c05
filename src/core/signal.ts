// A payload-free notification: "something you may have remembered has changed". The owner of some rows
// emits it after each committed (or failed) change to them; caches that keep facts read from those rows
// listen and forget. Listeners run synchronously, in order; one that throws does not stop the others or
// the writer that emitted.
export class Signal {
  private readonly listeners = new Set<() => void>();

  /** Returns the function that stops listening. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch {
        /* the listener's own problem */
      }
    }
  }

  /** Runs `change` and emits once it has settled, committed or not (a failed write may have half-happened). */
  async after<T>(change: Promise<T>): Promise<T> {
    try {
      return await change;
    } finally {
      this.emit();
    }
  }
}
