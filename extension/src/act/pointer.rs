//! The pointer family: click and double click on whatever shows at the
//! element's centre, hover, press-and-hold, drag and drop, and a drag
//! along a path — each the sequence of events a real mouse makes
//! (`events.rs`).

use super::*;

/// Moves the pointer over element `index` (menus that open on hover).
pub(super) fn hover(index: u32) -> Result<String, Fail> {
    let el = registry::element(index)?;
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    let (x, y) = centre_in_view(&el, &window);
    let target = click_target(&el, x, y);
    let m = Mouse { window, x, y, keys: Keys::default() };
    m.pointer(&target, "pointerover", true, -1, 0);
    m.mouse(&target, "mouseover", true, 0, 0, 0);
    // `mouseenter` on the target and each ancestor the pointer enters
    // (it comes from outside the page), outermost first.
    let mut chain = Vec::new();
    let mut node = Some(target.clone());
    while let Some(n) = node {
        if matches!(proto::local_name(&n).as_str(), "html" | "body") {
            break;
        }
        node = dom::flat_parent(&n);
        chain.push(n);
    }
    for n in chain.iter().rev() {
        m.pointer(n, "pointerenter", false, -1, 0);
        m.mouse(n, "mouseenter", false, 0, 0, 0);
    }
    m.pointer(&target, "pointermove", true, -1, 0);
    m.mouse(&target, "mousemove", true, 0, 0, 0);
    // Synthetic events leave CSS `:hover` unmatched: its rules are applied
    // to the pointer's chain instead (`hover::emulate`).
    let styled = crate::hover::emulate(&target);
    Ok(format!(
        "moved the pointer over {}{}",
        describe(index, &el),
        if styled > 0 { " (the page's :hover styles apply to it)" } else { "" }
    ))
}

/// The longest press-and-hold.
pub(super) const MAX_HOLD_MS: u32 = 10_000;

/// Presses the pointer on element `index`, holds it for `ms` (pointer
/// moves of a steady hand every 100 ms, as some widgets expect), releases
/// it and clicks, as a mouse does.
pub(super) async fn hold(index: u32, ms: u32) -> Result<String, Fail> {
    let el = usable(index)?;
    let ms = ms.min(MAX_HOLD_MS);
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    let (x, y) = centre_in_view(&el, &window);
    let target = click_target(&el, x, y);
    let m = Mouse { window, x, y, keys: Keys::default() };
    m.press(&target);
    let mut held = 0;
    while held < ms {
        let step = (ms - held).min(100);
        gloo_timers::future::TimeoutFuture::new(step).await;
        held += step;
        if !proto::is_connected(&el) {
            break;
        }
    }
    // Released where the pointer is, on what is there now.
    let now = click_target(&el, x, y);
    m.pointer(&now, "pointerup", true, 0, 0);
    m.mouse(&now, "mouseup", true, 0, 0, 1);
    m.mouse(&now, "click", true, 0, 0, 1);
    Ok(format!("pressed and held {} for {held} ms", describe(index, &el)))
}

/// Presses the pointer at the first point of `points` (fractions of
/// element `index`'s box), moves it through the others in small steps
/// (several moves between two points, as a hand draws) and releases it at
/// the last one.
pub(super) async fn drag_path(index: u32, points: &[[f64; 2]]) -> Result<String, Fail> {
    let el = usable(index)?;
    if points.len() < 2 {
        return Err(failed("drag_path needs at least two points"));
    }
    if points.len() > 200 {
        return Err(failed("drag_path takes at most 200 points"));
    }
    if points.iter().flatten().any(|v| !v.is_finite() || !(-0.5..=1.5).contains(v)) {
        return Err(failed(
            "drag_path points are fractions of the element's box: [0, 0] is its top-left corner, [1, 1] its bottom-right",
        ));
    }
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    centre_in_view(&el, &window);
    let r = proto::get_bounding_client_rect(&el);
    let at = |p: &[f64; 2]| (r.x() + p[0] * r.width(), r.y() + p[1] * r.height());
    let under = |x: f64, y: f64| {
        window
            .document()
            .and_then(|d| proto::element_from_point(&d, x as f32, y as f32))
            .map(|hit| click_target(&hit, x, y))
            .unwrap_or_else(|| el.clone())
    };
    let (x0, y0) = at(&points[0]);
    let mut m = Mouse { window: window.clone(), x: x0, y: y0, keys: Keys::default() };
    let start = under(x0, y0);
    m.press(&start);
    // Pointer capture, as the browser gives a pressed mouse: the moves go
    // to what was pressed, wherever they are.
    let mut moves = 0;
    for pair in points.windows(2) {
        let (ax, ay) = at(&pair[0]);
        let (bx, by) = at(&pair[1]);
        let steps = (((bx - ax).hypot(by - ay)) / 8.0).ceil().clamp(1.0, 20.0) as u32;
        for k in 1..=steps {
            let f = f64::from(k) / f64::from(steps);
            m.x = ax + (bx - ax) * f;
            m.y = ay + (by - ay) * f;
            m.pointer(&start, "pointermove", true, -1, 1);
            m.mouse(&under(m.x, m.y), "mousemove", true, 0, 1, 0);
            moves += 1;
        }
        // Let the page draw between two points (requestAnimationFrame).
        gloo_timers::future::TimeoutFuture::new(16).await;
    }
    let end = under(m.x, m.y);
    m.pointer(&start, "pointerup", true, 0, 0);
    m.mouse(&end, "mouseup", true, 0, 0, 1);
    if end == start || proto::contains(&start, Some(&end)) {
        m.mouse(&end, "click", true, 0, 0, 1);
    }
    Ok(format!(
        "dragged the pointer along {} points ({moves} moves) over {}",
        points.len(),
        describe(index, &el)
    ))
}

/// Drags element `from` onto element `to`: HTML5 drag and drop (with a
/// shared `DataTransfer`) for draggable elements, and the pointer and
/// mouse sequence of a drag for widgets that follow the mouse (sortable
/// lists: the item ends up in the target's place).
pub(super) async fn drag(from: u32, to: u32, watch: &Watch) -> Result<String, Fail> {
    let a = usable(from)?;
    let b = registry::element(to)?;
    let window = dom::window_of(&a).ok_or_else(|| failed("the element has no window"))?;
    let (ax, ay) = centre_in_view(&a, &window);
    let source = click_target(&a, ax, ay);
    let mut m = Mouse { window: window.clone(), x: ax, y: ay, keys: Keys::default() };
    m.pointer(&source, "pointerover", true, -1, 0);
    m.mouse(&source, "mouseover", true, 0, 0, 0);
    m.pointer(&source, "pointerdown", true, 0, 1);
    m.mouse(&source, "mousedown", true, 0, 1, 1);
    let draggable = {
        let mut node = Some(source.clone());
        let mut found = None;
        while let Some(n) = node {
            if proto::draggable(&n.unchecked_ref::<HtmlElement>()) && proto::local_name(&n) != "img"
            {
                found = Some(n);
                break;
            }
            // As the browser does, the nearest draggable ancestor of what
            // was pressed is dragged: past the element too (a handle
            // inside a SortableJS item, made draggable on the press).
            node = dom::flat_parent(&n);
        }
        found
    };
    // Move a little first, as a hand does, so drag libraries start.
    m.x += 5.0;
    m.y += 5.0;
    m.pointer(&source, "pointermove", true, -1, 1);
    m.mouse(&source, "mousemove", true, 0, 1, 0);
    // The drop point: past the target's middle, a quarter of its size
    // further in the direction of travel, so that a sortable list puts the
    // item in the target's place (after it going down, before it going
    // up) rather than on the fence between the two; still inside it for a
    // drop zone.
    let (bx, by) = {
        let r = proto::get_bounding_client_rect(&b);
        let (cx, cy) = (r.x() + r.width() / 2.0, r.y() + r.height() / 2.0);
        let past = |from: f64, to: f64, size: f64| {
            if (to - from).abs() < 1.0 { to } else { to + (to - from).signum() * size / 4.0 }
        };
        (past(ax, cx, r.width()), past(ay, cy, r.height()))
    };
    if let Some(dragged) = draggable {
        let data = web_sys::DataTransfer::new().map_err(|e| failed(&js_text(&e)))?;
        let ev = |target: &Element, kind: &str, x: f64, y: f64| -> bool {
            let init = web_sys::DragEventInit::new();
            let mm = Mouse { window: window.clone(), x, y, keys: Keys::default() };
            mm.init(init.unchecked_ref(), true, 0, 1, 0);
            init.set_data_transfer(Some(&data));
            web_sys::DragEvent::new_with_event_init_dict(kind, &init)
                .and_then(|e| proto::dispatch_event(&target, &e))
                .unwrap_or(true)
        };
        if !ev(&dragged, "dragstart", m.x, m.y) {
            return Err(failed(&format!("{} refused to be dragged", describe(from, &a))));
        }
        ev(&dragged, "drag", m.x, m.y);
        // The browser's drag moves come later than `dragstart`: libraries
        // start the drag on the next tick (SortableJS sets its active list
        // in a `setTimeout(0)` and ignores `dragover` before it).
        gloo_timers::future::TimeoutFuture::new(16).await;
        let over = dom::element_at(&b, bx, by)
            .filter(|h| dom::hit_belongs(&b, h))
            .unwrap_or_else(|| b.clone());
        ev(&over, "dragenter", bx, by);
        ev(&over, "dragover", bx, by);
        watch.settle().await;
        ev(&over, "drop", bx, by);
        ev(&dragged, "dragend", bx, by);
    } else {
        for step in 1..=5 {
            let f = f64::from(step) / 5.0;
            m.x = ax + (bx - ax) * f;
            m.y = ay + (by - ay) * f;
            let under = window
                .document()
                .and_then(|d| proto::element_from_point(&d, m.x as f32, m.y as f32))
                .unwrap_or_else(|| b.clone());
            m.pointer(&under, "pointermove", true, -1, 1);
            m.mouse(&under, "mousemove", true, 0, 1, 0);
        }
        let under = window
            .document()
            .and_then(|d| proto::element_from_point(&d, bx as f32, by as f32))
            .unwrap_or_else(|| b.clone());
        m.pointer(&under, "pointerup", true, 0, 0);
        m.mouse(&under, "mouseup", true, 0, 0, 1);
    }
    Ok(format!("dragged {} onto {}", describe(from, &a), describe(to, &b)))
}

/// Scrolls the element to the middle of its window when its centre is not
/// in view — outside the window, or hidden by the scrolling of a box it is
/// in (what shows at its centre is not it) — then returns the centre of
/// its visible part (in its own window's coordinates).
pub(super) fn centre_in_view(el: &Element, window: &Window) -> (f64, f64) {
    let vw = window.inner_width().ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let vh = window.inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let centre = |r: &web_sys::DomRect| (r.x() + r.width() / 2.0, r.y() + r.height() / 2.0);
    let (x, y) = centre(&proto::get_bounding_client_rect(&el));
    let in_window = (0.0..vw).contains(&x) && (0.0..vh).contains(&y);
    let shows = || {
        dom::element_at(el, x, y).is_some_and(|hit| hit == *el || proto::contains(&el, Some(&hit)))
    };
    if !in_window || !shows() {
        let options = ScrollIntoViewOptions::new();
        options.set_block(ScrollLogicalPosition::Center);
        options.set_inline(ScrollLogicalPosition::Center);
        options.set_behavior(ScrollBehavior::Instant);
        proto::scroll_into_view(&el, &options);
    }
    let r = proto::get_bounding_client_rect(&el);
    let x0 = r.x().max(0.0);
    let y0 = r.y().max(0.0);
    let x1 = (r.x() + r.width()).min(vw).max(x0);
    let y1 = (r.y() + r.height()).min(vh).max(y0);
    ((x0 + x1) / 2.0, (y0 + y1) / 2.0)
}

/// What a click lands on: the deepest element at the point (through open
/// shadow roots) when it belongs to the element, else the element itself.
pub(super) fn click_target(el: &Element, x: f64, y: f64) -> Element {
    let Some(mut hit) = dom::element_at(el, x, y) else {
        return el.clone();
    };
    if !(hit == *el || proto::contains(&el, Some(&hit))) {
        return el.clone();
    }
    while let Some(deeper) = proto::shadow_root(&hit)
        .and_then(|s| proto::element_from_point(&s, x as f32, y as f32))
        .filter(|d| *d != hit)
    {
        hit = deeper;
    }
    hit
}

/// Clicks element `index` (`count` 2: a double click) and says what
/// happened.
pub(super) async fn click(
    index: u32,
    button: ClickButton,
    modifiers: &[Modifier],
    count: i32,
    watch: &Watch,
) -> Result<String, Fail> {
    let el = usable(index)?;
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    let (x, y) = centre_in_view(&el, &window);
    let target = click_target(&el, x, y);
    let keys = Keys::from(modifiers, is_mac(&window));
    let m = Mouse { window, x, y, keys };
    let (code, mask) = button_codes(button);

    m.pointer(&target, "pointerover", true, -1, 0);
    m.pointer(&target, "pointerenter", false, -1, 0);
    m.mouse(&target, "mouseover", true, 0, 0, 0);
    m.mouse(&target, "mouseenter", false, 0, 0, 0);
    m.pointer(&target, "pointermove", true, -1, 0);
    m.mouse(&target, "mousemove", true, 0, 0, 0);
    // The pointer left an element hovered before: its `:hover` styles
    // follow the pointer here (a submenu item keeps its menu open).
    if crate::hover::emulating() {
        crate::hover::emulate(&target);
    }
    for detail in 1..=count {
        // The page's `mousedown` handlers may move the focus themselves
        // (`focus()`): its events follow, as in a focused document.
        focus::follow(&target, || {
            m.pointer(&target, "pointerdown", true, code, mask);
            let down = m.mouse(&target, "mousedown", true, code, mask, detail);
            if down && detail == 1 {
                focus_from(&target);
            }
        });
        if button == ClickButton::Right {
            m.mouse(&target, "contextmenu", true, code, mask, 0);
        }
        // Not after the click: events that come once its handlers ran
        // would arrive after what they did (flatpickr focuses its field
        // and closes its calendar in one handler; a late `focus` opens it
        // again).
        m.pointer(&target, "pointerup", true, code, 0);
        m.mouse(&target, "mouseup", true, code, 0, detail);
        // The click itself, dispatched with its coordinates and keys; the
        // browser runs its activation behaviour (links, submit buttons,
        // checkboxes, labels) as for `HTMLElement.click()`.
        let kind = if button == ClickButton::Left { "click" } else { "auxclick" };
        m.mouse(&target, kind, true, code, 0, detail);
    }
    if count == 2 && button == ClickButton::Left {
        m.mouse(&target, "dblclick", true, code, 0, 2);
    }

    let what = match (button, count) {
        (ClickButton::Left, 2) => "double-clicked",
        (ClickButton::Left, _) => "clicked",
        (ClickButton::Middle, _) => "middle-clicked",
        (ClickButton::Right, _) => "right-clicked",
    };
    let mut summary = format!("{what} {}", describe(index, &el));
    watch.settle().await;
    if proto::local_name(&el) == "input" && proto::is_connected(&el) {
        let input = el.unchecked_ref::<HtmlInputElement>();
        if matches!(input.type_().as_str(), "checkbox" | "radio") {
            summary.push_str(if input.checked() { " (now checked)" } else { " (now unchecked)" });
        }
    }
    Ok(summary)
}
