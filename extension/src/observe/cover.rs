//! Covering: whether an element shows where a person would click it —
//! the hit tests at its centre and towards its corners, what covers it
//! when it does not, and the rectangle arithmetic they share.

use super::*;

/// What covered an element, each with its box now.
pub(super) fn with_boxes(by: Vec<Element>) -> Vec<(Element, Rect)> {
    by.into_iter()
        .map(|b| {
            let r = proto::client_rect(&b);
            (b, r)
        })
        .collect()
}

/// The overlap of two rectangles, if they overlap.
pub(crate) fn intersect(a: &Rect, b: &Rect) -> Option<Rect> {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.width).min(b.x + b.width);
    let y1 = (a.y + a.height).min(b.y + b.height);
    (x1 > x0 && y1 > y0).then_some(Rect { x: x0, y: y0, width: x1 - x0, height: y1 - y0 })
}

/// Whether the element shows at the centre of its visible part, asked of
/// the document or shadow root that holds it. `local` is the element's
/// rectangle in its own document's viewport.
pub(crate) fn uncovered(el: &Element, local: &Rect, frame: &Frame, clip: &Rect) -> bool {
    covering(el, local, frame, clip).is_none()
}

/// What covers the element at every hit-test point of [`uncovered`]: the
/// elements hit instead, each once (empty when some point had no answer);
/// `None` when it shows.
pub(crate) fn covering(
    el: &Element,
    local: &Rect,
    frame: &Frame,
    clip: &Rect,
) -> Option<Vec<Element>> {
    // The part of the element inside its own frame and inside the top window.
    let own = Rect { x: 0.0, y: 0.0, width: frame.width, height: frame.height };
    let clip_local =
        Rect { x: clip.x - frame.dx, y: clip.y - frame.dy, width: clip.width, height: clip.height };
    let part = intersect(local, &own).and_then(|p| intersect(&p, &clip_local))?;
    // The centre first, then four points towards the corners: an element
    // partly covered (a sticky header over a link) is still usable where it
    // shows; one covered at all five (a modal over the page) is not.
    const POINTS: [(f64, f64); 5] = [(0.5, 0.5), (0.2, 0.2), (0.8, 0.2), (0.2, 0.8), (0.8, 0.8)];
    let mut by: Vec<Element> = Vec::new();
    let mut unanswered = false;
    for (fx, fy) in POINTS {
        let (x, y) = (part.x + part.width * fx, part.y + part.height * fy);
        match dom::element_at(el, x, y) {
            Some(hit) if dom::hit_belongs(el, &hit) => return None,
            Some(hit) if !by.contains(&hit) => by.push(hit),
            Some(_) => {}
            None => unanswered = true,
        }
    }
    // No answer at any point (the hit test cannot see there): keep it.
    if by.is_empty() {
        return None;
    }
    if unanswered {
        by.clear();
    }
    Some(by)
}
