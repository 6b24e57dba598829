// Label placement for the graph: labels taken in priority order, a label whose box meets one
// already placed left out, so that no two drawn labels overlap. Pure (no DOM), for the tests too.

/** Whether boxes `a` and `b` ({x, y, w, h}: left, top, width, height) overlap. */
export function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * The boxes to draw, in `boxes`' order (their priority), at most `limit`, none meeting another:
 * each box is kept unless it overlaps one kept before it. Writes the kept boxes into `out`
 * (emptied first; the frame loop passes the same array every frame) and returns it.
 */
export function placeLabels(boxes, limit = Infinity, out = []) {
  out.length = 0;
  for (const box of boxes) {
    if (out.length >= limit) break;
    let free = true;
    for (const kept of out) {
      if (overlaps(box, kept)) { free = false; break; }
    }
    if (free) out.push(box);
  }
  return out;
}
