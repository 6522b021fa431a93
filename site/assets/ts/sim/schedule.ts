// When a widget draws: at the next animation frame; while a run streams,
// at most ten times a second and no more often than the last drawing's
// cost allows, so a fast stream never starves the page.
export class Schedule {
  private frame = 0;
  private lastDraw = 0;
  private drawCost = 0;

  constructor(private draw: () => void, private streaming: () => boolean) {}

  // soon draws at the next frame that the gap above allows.
  soon(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      const gap = this.streaming() ? Math.max(100, this.drawCost * 4) : 0;
      const wait = gap - (performance.now() - this.lastDraw);
      if (wait > 0) {
        this.frame = 0;
        setTimeout(() => this.soon(), wait);
        return;
      }
      this.frame = 0;
      const t0 = performance.now();
      this.draw();
      this.lastDraw = performance.now();
      this.drawCost = this.lastDraw - t0;
    });
  }

  // started counts the gap from now: a run that is done within it is
  // drawn once, done, without a drawing of its empty panes first.
  started(): void {
    this.lastDraw = performance.now();
  }
}
