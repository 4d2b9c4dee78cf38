//! Whether the kept lines still hold around the re-walked segments:
//! nothing moved, nothing newly covered or uncovered, no field changed its
//! value.

use super::*;

/// Whether the kept lines outside the re-walked ones still hold: nothing
/// moved, nothing newly covered or uncovered, no field changed its value.
pub(super) fn still_laid_out(
    cache: &Cache,
    fresh: &[(usize, usize)],
    areas: &[Rect],
    top: &Frame,
    dirty: &[Node],
) -> Result<(), Fallback> {
    let is_fresh = |i: usize| fresh.iter().any(|&(a, b)| i >= a && i < b);
    let same = |now: &Rect, r: &Rect| {
        now.x == r.x && now.y == r.y && now.width == r.width && now.height == r.height
    };
    // An element of a frame is placed in its frame's viewport: the frame's
    // own checks below stand for it.
    let in_frame = |el: &Element| proto::owner_document(&el).is_some_and(|d| d != cache.document);
    let same_place = |el: &Element, r: &Rect| {
        (proto::is_connected(&el) && same(&proto::client_rect(&el), r)) || in_frame(el)
    };
    let root = proto::document_element(&cache.document).ok_or("the document has no root")?;
    if f64::from(proto::scroll_width(&root)) != cache.viewport.page_width
        || f64::from(proto::scroll_height(&root)) != cache.viewport.page_height
    {
        return Err("the page's size changed");
    }
    // The frames kept: the same document, where they were, the same size
    // and scroll, and nothing changed over them.
    for f in &cache.frames {
        let iframe = f.iframe.unchecked_ref::<web_sys::HtmlIFrameElement>();
        if !proto::is_connected(&f.iframe)
            || iframe.content_document().as_ref() != Some(&f.document)
        {
            return Err("a frame loaded another page");
        }
        let window = proto::default_view(&f.document).ok_or("a frame has no window")?;
        let size = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
        let scroll = (window.scroll_x().unwrap_or(0.0), window.scroll_y().unwrap_or(0.0));
        if !same(&proto::client_rect(&f.iframe), &f.rect)
            || (size(window.inner_width()), size(window.inner_height())) != f.size
            || scroll != f.scroll
        {
            return Err("a frame moved, was resized or scrolled");
        }
        if areas.iter().any(|a| observe::intersect(a, &f.rect).is_some()) {
            return Err("a change over a frame");
        }
    }
    // The cross-origin frames kept: where they were, the same size, and
    // nothing changed over them (what they show is asked again).
    for f in &cache.remote {
        let r = proto::client_rect(&f.iframe);
        let content =
            (r.x + f64::from(f.iframe.client_left()), r.y + f64::from(f.iframe.client_top()));
        if !proto::is_connected(&f.iframe)
            || !same(&r, &f.rect)
            || content != (f.view.dx, f.view.dy)
        {
            return Err("a cross-origin frame moved, was resized or removed");
        }
        if areas.iter().any(|a| observe::intersect(a, &f.rect).is_some()) {
            return Err("a change over a cross-origin frame");
        }
    }
    // The listed elements next to each re-walked run.
    for &(a, b) in fresh {
        let before = (0..a).rev().filter(|&i| matches!(cache.lines[i], Line::Element(_)));
        let after = (b..cache.lines.len()).filter(|&i| matches!(cache.lines[i], Line::Element(_)));
        for i in before.take(NEIGHBOURS).chain(after.take(NEIGHBOURS)) {
            if let (Line::Element(seen), Some(el)) = (&cache.lines[i], &cache.nodes[i]) {
                if !same_place(el, &seen.rect) {
                    return Err("an element next to a changed part moved");
                }
            }
        }
    }
    for (i, (line, node)) in cache.lines.iter().zip(&cache.nodes).enumerate() {
        let (Line::Element(seen), Some(el)) = (line, node) else {
            continue;
        };
        if is_fresh(i) {
            continue;
        }
        if seen.in_viewport {
            // In view: where it was, and — where something changed over it —
            // still the element a click there hits.
            let now = proto::client_rect(&el);
            let moved = !proto::is_connected(&el) || !same(&now, &seen.rect);
            if moved && !in_frame(el) {
                return Err("an element in view moved");
            }
            let changed_over = areas.iter().any(|a| observe::intersect(a, &seen.rect).is_some());
            if changed_over && !observe::uncovered(el, &now, top, &cache.clips[i]) && !in_frame(el)
            {
                return Err("an element in view was covered");
            }
        }
        if !same_value(el, seen) {
            return Err("a field's value changed without an event");
        }
    }
    // What was covered is still covered: asked again (five hit tests
    // each, a fraction of a millisecond) only when it or what covered it
    // moved or changed.
    let dirty: Vec<Node> = dirty.iter().map(outermost).collect();
    let touched = |n: &Node| {
        let n = outermost(n);
        dirty.iter().any(|d| proto::contains(&d, Some(&n)) || proto::contains(&n, Some(d)))
    };
    for c in &cache.covered {
        if !proto::is_connected(&c.el) || in_frame(&c.el) {
            continue;
        }
        let r = proto::client_rect(&c.el);
        let unchanged = !c.by.is_empty()
            && same(&r, &c.rect)
            && !touched(c.el.unchecked_ref())
            && c.by.iter().all(|(b, rect)| {
                proto::is_connected(&b) && same(&proto::client_rect(&b), rect) && !touched(b)
            });
        if unchanged {
            continue;
        }
        if r.width > 0.0
            && r.height > 0.0
            && observe::intersect(&r, &c.clip).is_some()
            && observe::uncovered(&c.el, &r, top, &c.clip)
        {
            return Err("a covered element was uncovered");
        }
    }
    // What was left out with an empty box is still empty: an image that
    // came (CSS `content: url(…)`, an `<img>` in a link) or a web font
    // gives a box with no mutation to say so.
    for e in &cache.empty {
        let r = proto::client_rect(&e);
        if proto::is_connected(&e) && r.width > 0.0 && r.height > 0.0 {
            return Err("an element with an empty box got one");
        }
    }
    Ok(())
}

/// `node`, or the outermost shadow host it is in: what `contains` sees of
/// it from the document.
pub(super) fn outermost(node: &Node) -> Node {
    let mut n = node.clone();
    loop {
        let root = proto::get_root_node(&n);
        if proto::node_type(&root) != FRAGMENT_NODE {
            return n;
        }
        n = root.unchecked_into::<web_sys::ShadowRoot>().host().unchecked_into();
    }
}

/// Adds where a re-walked segment paints now: its box and the box of every
/// element in it (a dialog in a portal is fixed over the page while its
/// container has no height). Hit tests are repeated only there: on a large
/// page each one costs a fraction of a millisecond.
pub(super) fn painted(s: &Element, areas: &mut Vec<Rect>) {
    /// Beyond this many boxes, one box around them all.
    const MAX_AREAS: usize = 256;
    let mut add = |r: Rect| {
        if r.width > 0.0 && r.height > 0.0 {
            areas.push(r);
        }
    };
    add(proto::client_rect(&s));
    if let Ok(all) = proto::query_selector_all(&s, "*") {
        if all.length() as usize > MAX_AREAS {
            // A large segment: count the whole window as changed rather
            // than read every box in it.
            let w = web_sys::window();
            let size = |v: Option<Result<JsValue, JsValue>>| {
                v.and_then(|v| v.ok()).and_then(|v| v.as_f64()).unwrap_or(f64::MAX)
            };
            let width = size(w.as_ref().map(|w| w.inner_width()));
            let height = size(w.as_ref().map(|w| w.inner_height()));
            areas.push(Rect { x: 0.0, y: 0.0, width, height });
            return;
        }
        for i in 0..all.length() {
            if let Some(e) = all.item(i) {
                add(proto::client_rect(&e.unchecked_ref::<Element>()));
            }
        }
    }
    if areas.len() > MAX_AREAS {
        let x0 = areas.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
        let y0 = areas.iter().map(|r| r.y).fold(f64::INFINITY, f64::min);
        let x1 = areas.iter().map(|r| r.x + r.width).fold(f64::NEG_INFINITY, f64::max);
        let y1 = areas.iter().map(|r| r.y + r.height).fold(f64::NEG_INFINITY, f64::max);
        *areas = vec![Rect { x: x0, y: y0, width: x1 - x0, height: y1 - y0 }];
    }
}

/// Whether a form field still holds the value (or check) it was seen with:
/// values change without mutations, and not every page fires events.
pub(super) fn same_value(el: &Element, seen: &Seen) -> bool {
    match seen.tag.as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            match seen.input_type.as_deref() {
                Some("checkbox" | "radio") => input.checked() == seen.checked,
                Some("password") => true,
                _ => seen.value.as_deref() == Some(input.value().as_str()),
            }
        }
        "textarea" => {
            seen.value.as_deref()
                == Some(el.unchecked_ref::<HtmlTextAreaElement>().value().as_str())
        }
        "select" => {
            let mut now = Seen::default();
            observe::read_select(el, &mut now);
            now.value == seen.value && now.options == seen.options
        }
        _ => true,
    }
}
