//! Iframes during the walk: a same-origin one is walked into in place; a
//! cross-origin one is noted for its own content script (`frames/`)
//! unless a person cannot see into it.

use super::*;

impl Walk {
    /// Walks into a same-origin iframe; a cross-origin one (no
    /// `contentDocument` here) is left to its own content script.
    pub(super) fn frame(&mut self, el: &Element, outer: &Frame, shown: bool) {
        let iframe = el.unchecked_ref::<HtmlIFrameElement>();
        let (Some(doc), Some(window)) = (iframe.content_document(), iframe.content_window()) else {
            // ---- frames.rs hook ----
            if let Some(p) = self.cross_origin_frame(el, outer).filter(|_| shown) {
                self.remote.push(p);
            }
            return;
        };
        // Only a frame of the top document's light tree is watched for
        // changes: after any other, the next observation walks it again.
        let watched = outer.cached && self.host.is_none() && self.in_frame.is_none();
        self.saw_frame |= !watched;
        let Some(root) = proto::document_element(&doc) else {
            return;
        };
        crate::listeners::refresh(&doc);
        let r = proto::client_rect(el);
        let dx = outer.dx + r.x + f64::from(el.client_left());
        let dy = outer.dy + r.y + f64::from(el.client_top());
        let width = num(window.inner_width());
        let height = num(window.inner_height());
        let inner_box = Rect { x: dx, y: dy, width, height };
        let clip = intersect(&inner_box, &self.clip(outer)).unwrap_or(Rect {
            x: dx,
            y: dy,
            width: 0.0,
            height: 0.0,
        });
        let frame = Frame { window: window.clone(), dx, dy, clip, width, height, cached: false };
        if !watched {
            self.visit(&root, &frame, Ctx::default());
            return;
        }
        let rect = Rect { x: r.x + outer.dx, y: r.y + outer.dy, ..r };
        self.frames.push(FrameSeen {
            iframe: el.clone(),
            document: doc,
            rect,
            size: (width, height),
            scroll: (window.scroll_x().unwrap_or(0.0), window.scroll_y().unwrap_or(0.0)),
            breaks: self.breaks_at(&root, &frame),
        });
        self.in_frame = Some(el.clone());
        self.visit(&root, &frame, Ctx::default());
        self.in_frame = None;
    }

    /// Whether visiting `el` starts and ends with a clean break (a block
    /// that is walked into): nothing pending around it runs into it.
    pub(super) fn breaks_at(&self, el: &Element, frame: &Frame) -> bool {
        let hidden = dom::get(el, Name::AriaHidden).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let st = read_style(el, frame, None, None);
        !dom::has(el, Name::Inert) && (self.ignore_aria_hidden || !hidden) && !st.skip && st.block
    }

    /// A cross-origin frame to observe (`frames/`), unless a person
    /// cannot see into it: no size, pushed off the page, or in view but
    /// covered at every point tried (a modal over it).
    pub(super) fn cross_origin_frame(
        &mut self,
        el: &Element,
        outer: &Frame,
    ) -> Option<crate::frames::Pending> {
        let r = proto::client_rect(el);
        let (width, height) =
            (f64::from(proto::client_width(&el)), f64::from(proto::client_height(&el)));
        if width <= 0.0 || height <= 0.0 || self.unreachable(&r, outer) {
            return None;
        }
        let dx = outer.dx + r.x + f64::from(el.client_left());
        let dy = outer.dy + r.y + f64::from(el.client_top());
        let clip = self.clip(outer);
        let visible = intersect(&Rect { x: dx, y: dy, width, height }, &clip);
        if visible.is_some() {
            if let Some(by) = covering(el, &r, outer, &clip) {
                // Kept like a covered element: uncovered later, it is asked.
                let by = with_boxes(by);
                self.covered.push(Covered { el: el.clone(), clip, rect: r, by });
                return None;
            }
        }
        // Only a frame of the top document's light tree is asked again by a
        // re-observation that re-reads the rest in place (`incremental/`).
        self.saw_frame |= !(outer.cached && self.host.is_none() && self.in_frame.is_none());
        self.flush();
        let clip = visible.unwrap_or(Rect { x: dx, y: dy, width: 0.0, height: 0.0 });
        let view = crate::frames::View { dx, dy, clip };
        let (at, iframe, rect) = (self.lines.len(), el.clone(), r);
        Some(crate::frames::Pending { at, iframe, view, rect })
    }
}
