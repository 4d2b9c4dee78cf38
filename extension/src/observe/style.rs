//! Style reading: what the walk needs of an element's computed style
//! ([`StyleBits`], read once per element; `style_cache.rs` keeps it
//! between observations), and the small style and box tests built on it
//! (icon fonts, small boxes).

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
    /// A flex row: its children are laid out side by side.
    pub row: bool,
    /// `cursor: move` or `grab`: what a drag starts from.
    pub grab: bool,
}

pub(super) fn read_style(el: &Element, frame: &Frame, hover: Option<&str>) -> StyleBits {
    let Ok(Some(style)) = frame.window.get_computed_style(el) else {
        return StyleBits { skip: true, ..StyleBits::default() };
    };
    let prop = |name: Name| dom::property(&style, name);
    let display = prop(Name::Display);
    // A transparent file input laid over a "Choose a file" area is the
    // control a person clicks: it stays listed (issue 19). So does a
    // combobox's input made transparent while the box shows its chosen
    // value (react-select after a choice): the box is what a person uses.
    let transparent = dom::decimal(&prop(Name::Opacity)).is_some_and(|o| o <= 0.0);
    // So is a transparent `<select>` laid over a date picker's month or
    // year caption (Pikaday's): a person clicks the caption and gets it.
    // (One under the widget that replaced it is left out as covered.)
    if display == "none"
        || (transparent
            && !is_file_input(el)
            && !is_combobox_input(el)
            && proto::local_name(el) != "select")
    {
        return StyleBits { skip: true, ..StyleBits::default() };
    }
    let visibility = prop(Name::Visibility);
    let contents = display == "contents";
    let block = !display.starts_with("inline") && !contents;
    // `move` and `grab`: items of drag-and-drop lists (sortables,
    // boards), which `drag_and_drop` needs the numbers of.
    let cursor = prop(Name::Cursor);
    let grab = matches!(cursor.as_str(), "move" | "grab");
    let pointer = grab || cursor == "pointer";
    let row = matches!(display.as_str(), "flex" | "inline-flex")
        && prop(Name::FlexDirection).starts_with("row")
        && prop(Name::FlexWrap) == "nowrap";
    StyleBits {
        skip: false,
        shown: visibility != "hidden" && visibility != "collapse" && !contents,
        block,
        pointer,
        contents,
        scrolls: block && matches!(prop(Name::OverflowY).as_str(), "auto" | "scroll" | "overlay"),
        boxed: display != "inline",
        image: prop(Name::Content).starts_with("url(")
            || (prop(Name::BackgroundImage).starts_with("url(")
                && matches!(prop(Name::BackgroundPosition).as_str(), "0% 0%" | "0px 0px")),
        // Asked only when the cursor does not say it already (one
        // `matches` per element on pages with such rules).
        hover: !pointer && hover.is_some_and(|s| proto::matches(el, s).unwrap_or(false)),
        row,
        grab,
    }
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
    let r = proto::get_bounding_client_rect(el);
    r.width() > 0.0 && r.width() <= 48.0 && r.height() <= 48.0
}
