//! Style reading: what the walk needs of an element's computed style
//! ([`StyleBits`], read once per element; `style_cache.rs` keeps it
//! between observations): what is skipped (`display: none`; `opacity: 0`
//! but for a control laid over what a person sees), the pointer cursor and
//! the `:hover` rules that give it or reveal a row's controls (`hover.rs`),
//! and the small style and box tests built on it (icon fonts, small
//! boxes).

use super::*;

/// What the walk needs of an element's computed style.
#[derive(Clone, Copy, Default)]
pub struct StyleBits {
    /// `display: none` or `opacity: 0`: nothing of it shows.
    pub skip: bool,
    /// Its own box shows (not `visibility: hidden`, not `display: contents`).
    pub shown: bool,
    /// A block-level box (context text is cut at its edges).
    pub block: bool,
    pub pointer: bool,
    pub contents: bool,
    /// `overflow-y` lets it scroll.
    pub scrolls: bool,
    /// Not a plain inline box (`inline-block`, `block`, `flex`…).
    pub boxed: bool,
    /// Drawn as an image by CSS (`content: url(…)`, or an unshifted
    /// `background-image`, not a sprite): an icon, named by its file.
    pub image: bool,
    /// Its `:hover` rule gives the pointer cursor (`hover.rs`).
    pub hover: bool,
    /// A `:hover` rule of it shows or hides something inside it (a row
    /// whose delete button appears under the pointer, `hover.rs`).
    pub reveals: bool,
    /// A flex row: its children are laid out side by side.
    pub row: bool,
    /// `cursor: move` or `grab`: what a drag starts from.
    pub grab: bool,
}

/// The computed style properties [`read_style`] reads of every element,
/// in this order.
const WALK_PROPERTIES: [&str; 7] =
    ["display", "opacity", "visibility", "cursor", "overflow-y", "content", "background-image"];
/// Those it reads of a flex box only.
const FLEX_PROPERTIES: [&str; 2] = ["flex-direction", "flex-wrap"];
/// That it reads of a box with a background picture only.
const PICTURE_PROPERTIES: [&str; 1] = ["background-position"];
/// That it reads of a transparent control only.
const LAID_PROPERTIES: [&str; 1] = ["position"];

thread_local! {
    /// [`WALK_PROPERTIES`], [`FLEX_PROPERTIES`] and [`PICTURE_PROPERTIES`]
    /// as JavaScript strings, made once.
    static WALK_NAMES: [js_sys::Array; 4] = [
        &WALK_PROPERTIES[..],
        &FLEX_PROPERTIES[..],
        &PICTURE_PROPERTIES[..],
        &LAID_PROPERTIES[..],
    ]
    .map(|names| names.iter().map(|&n| wasm_bindgen::JsValue::from_str(n)).collect());
}

/// The computed style's verdicts for `el`; `hover` and `reveal` are the
/// page's selectors of elements whose `:hover` rules give the pointer
/// cursor or show what is inside them (`hover.rs`).
pub(super) fn read_style(
    el: &Element,
    frame: &Frame,
    hover: Option<&str>,
    reveal: Option<&str>,
) -> StyleBits {
    // The values every element needs in one call to the page (each call
    // to the page costs the walk much while its code runs cold); those
    // only some need in another, for those only (each value read costs
    // the browser about a microsecond: a tenth of a warm walk's time).
    let read = |set: usize| {
        WALK_NAMES.with(|names| proto::computed_values(&frame.window, el, &names[set]))
    };
    let Some(values) = read(0) else {
        return StyleBits { skip: true, ..StyleBits::default() };
    };
    let mut values = values.split('\u{1f}');
    let mut next = || values.next().unwrap_or("");
    let (display, opacity, visibility, cursor) = (next(), next(), next(), next());
    let (overflow_y, content, background_image) = (next(), next(), next());
    // A transparent control laid over what a person sees (a checkbox at
    // opacity 0 over the circle its row draws, a file input over a "Choose
    // a file" area, a `<select>` over a date picker's month caption) is
    // what a click there lands on: it is not skipped, and the walk lists
    // it where it is the top element at a point (`cover.rs`; one under
    // the widget that replaced it is covered). Laid over: out of the flow
    // (`position: absolute` or `fixed`); a transparent control in the
    // flow leaves a blank a person does not click. So is a combobox's
    // input made transparent while its box shows the chosen value
    // (react-select after a choice): the box is what a person uses.
    let transparent = dom::decimal(opacity).is_some_and(|o| o <= 0.0);
    if display == "none" || (transparent && !is_combobox_input(el) && !laid_over(el, &read)) {
        return StyleBits { skip: true, ..StyleBits::default() };
    }
    let contents = display == "contents";
    let block = !display.starts_with("inline") && !contents;
    // A cursor drawn from a picture falls back to a keyword, last
    // (`url(hand.svg) 4 4, pointer`): the kind of cursor it is.
    let cursor = cursor.rsplit(',').next().unwrap_or_default().trim();
    // `move` and `grab`: items of drag-and-drop lists (sortables,
    // boards), which `drag_and_drop` needs the numbers of.
    let grab = matches!(cursor, "move" | "grab");
    let pointer = grab || cursor == "pointer";
    let row = matches!(display, "flex" | "inline-flex")
        && read(1).is_some_and(|flex| {
            let (direction, wrap) = flex.split_once('\u{1f}').unwrap_or_default();
            direction.starts_with("row") && wrap == "nowrap"
        });
    StyleBits {
        skip: false,
        shown: visibility != "hidden" && visibility != "collapse" && !contents,
        block,
        pointer,
        contents,
        scrolls: block && matches!(overflow_y, "auto" | "scroll" | "overlay"),
        boxed: display != "inline",
        image: content.starts_with("url(")
            || (background_image.starts_with("url(")
                && read(2)
                    .is_some_and(|position| matches!(position.as_str(), "0% 0%" | "0px 0px"))),
        // Asked only when the cursor does not say it already (one
        // `matches` per element on pages with such rules).
        hover: !pointer && hover.is_some_and(|s| proto::matches(el, s).unwrap_or(false)),
        reveals: reveal.is_some_and(|s| proto::matches(el, s).unwrap_or(false)),
        row,
        grab,
    }
}

/// Whether a transparent element is a control laid over something else
/// (out of the flow): see [`read_style`]. `read` reads a property set.
fn laid_over(el: &Element, read: &dyn Fn(usize) -> Option<String>) -> bool {
    let tag = proto::local_name(el);
    is_interactive(el, &tag, proto::has_attributes(el))
        && read(3).is_some_and(|p| matches!(p.as_str(), "absolute" | "fixed"))
}

/// Whether the element's text is drawn in an icon font (Material Icons,
/// Material Symbols): ligatures whose words are pictures.
pub(super) fn icon_font(el: &Element, frame: &Frame) -> bool {
    let Ok(Some(style)) = frame.window.get_computed_style(el) else {
        return false;
    };
    let family = dom::property(&style, Name::FontFamily).to_ascii_lowercase();
    family.contains("material icons") || family.contains("material symbols")
}

/// Whether `el`'s box is at most 48 px each way (an icon, a handle).
pub(super) fn small_box(el: &Element) -> bool {
    let r = proto::client_rect(el);
    r.width > 0.0 && r.width <= 48.0 && r.height <= 48.0
}
