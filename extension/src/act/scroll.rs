//! Scrolling: the window, or the scrollable box that holds an element.

use super::*;

/// Scrolls the window, or the scrollable box that holds element `index`.
pub(super) fn scroll(
    direction: ScrollDirection,
    index: Option<u32>,
    pages: Option<f64>,
) -> Result<String, Fail> {
    let pages = pages.unwrap_or(1.0);
    if !pages.is_finite() || pages <= 0.0 {
        return Err(failed("`pages` must be a positive number"));
    }
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let vertical = matches!(direction, ScrollDirection::Up | ScrollDirection::Down);
    let sign =
        if matches!(direction, ScrollDirection::Up | ScrollDirection::Left) { -1.0 } else { 1.0 };
    let word = match direction {
        ScrollDirection::Up => "up",
        ScrollDirection::Down => "down",
        ScrollDirection::Left => "left",
        ScrollDirection::Right => "right",
    };
    let container = match index {
        Some(i) => {
            let el = registry::element(i)?;
            scrollable_box(&el, vertical).map(|b| (b, describe(i, &el)))
        }
        None => None,
    };
    let options = ScrollToOptions::new();
    options.set_behavior(ScrollBehavior::Instant);
    let n = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let (moved, now, end, what) = match container {
        Some((b, who)) => {
            let size = if vertical { proto::client_height(&b) } else { proto::client_width(&b) };
            let step = sign * pages * f64::from(size);
            let pos = |b: &Element| {
                if vertical { proto::scroll_top(&b) } else { proto::scroll_left(&b) }
            };
            let start = pos(&b);
            if vertical {
                options.set_top(step)
            } else {
                options.set_left(step)
            }
            proto::scroll_by(&b, &options);
            let end = if vertical {
                proto::scroll_height(&b) - proto::client_height(&b)
            } else {
                proto::scroll_width(&b) - proto::client_width(&b)
            };
            (
                f64::from(pos(&b) - start),
                f64::from(pos(&b)),
                f64::from(end),
                format!("the box holding {who}"),
            )
        }
        None => {
            let size = if vertical { n(window.inner_height()) } else { n(window.inner_width()) };
            let pos =
                |w: &Window| if vertical { w.scroll_y() } else { w.scroll_x() }.unwrap_or(0.0);
            let start = pos(&window);
            if vertical {
                options.set_top(sign * pages * size)
            } else {
                options.set_left(sign * pages * size)
            }
            window.scroll_by_with_scroll_to_options(&options);
            let root = window.document().and_then(|d| proto::document_element(&d));
            let end = root.map_or(0.0, |r| {
                if vertical {
                    f64::from(proto::scroll_height(&r)) - size
                } else {
                    f64::from(proto::scroll_width(&r)) - size
                }
            });
            (pos(&window) - start, pos(&window), end.max(0.0), "the page".to_owned())
        }
    };
    if moved.abs() < 1.0 {
        let edge = match direction {
            ScrollDirection::Up => "top",
            ScrollDirection::Down => "bottom",
            ScrollDirection::Left => "left edge",
            ScrollDirection::Right => "right edge",
        };
        return Ok(format!("did not scroll {word}: {what} is already at the {edge}"));
    }
    Ok(format!(
        "scrolled {what} {word} by {}px (now at {} of {}px)",
        moved.abs().round() as i64,
        now.round() as i64,
        end.round() as i64
    ))
}

/// The element itself or its nearest ancestor that scrolls along the axis.
pub(super) fn scrollable_box(el: &Element, vertical: bool) -> Option<Element> {
    let mut node = Some(el.clone());
    while let Some(n) = node {
        let tag = proto::local_name(&n);
        if tag == "body" || tag == "html" {
            return None;
        }
        let overflows = if vertical {
            proto::scroll_height(&n) > proto::client_height(&n)
        } else {
            proto::scroll_width(&n) > proto::client_width(&n)
        };
        if overflows {
            let style = dom::window_of(&n).and_then(|w| w.get_computed_style(&n).ok().flatten());
            let prop = if vertical { "overflow-y" } else { "overflow-x" };
            let value = style.and_then(|s| s.get_property_value(prop).ok()).unwrap_or_default();
            if matches!(value.as_str(), "auto" | "scroll" | "overlay") {
                return Some(n);
            }
        }
        node = dom::flat_parent(&n);
    }
    None
}
