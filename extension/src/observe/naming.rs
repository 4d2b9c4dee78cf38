//! Naming: what an unnamed control is called — by its icon (image file
//! name, icon-font ligature, sprite), by words in its class, by the symbol
//! CSS draws it with (`content: '×'`, named from `symbols.txt`), or by the
//! elements its `aria-labelledby` names.
//!
//! A field's name, in order (`describe.rs` applies it): the standard's —
//! `aria-labelledby`, `aria-label`, its `<label>` (`labels.rs`) — then,
//! when the page gives none, what a person reads as its label
//! (`crate::visual_label`: the text before it in its line, cell, row or
//! fieldset, then its placeholder, then a title that reads as words, then
//! the text after it; never a message; parts of a split field by their
//! group's label and place). Editors and widgets (comboboxes, list boxes,
//! sliders) are named the same way.

use super::*;

/// An icon's name: the file name of its image, without the extension
/// (`url("…/images/folder-closed.gif")` → `folder-closed`).
pub(super) fn icon_name(el: &Element, frame: &Frame) -> Option<String> {
    let url = css_image(el, frame)?;
    let path = url.split(['?', '#']).next()?;
    let file = path.rsplit('/').next()?;
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    (!stem.is_empty() && stem.len() <= 40).then(|| stem.to_owned())
}

/// The address of the image CSS draws an element with (`content: url(…)`,
/// else `background-image`), unless inline (`data:`).
pub(super) fn css_image(el: &Element, frame: &Frame) -> Option<String> {
    css_url(el, frame, true)
}

/// The address of the image an element's box is replaced by (`content:
/// url(…)`): its size is the image's once it has come.
pub(super) fn content_image(el: &Element, frame: &Frame) -> Option<String> {
    css_url(el, frame, false)
}

fn css_url(el: &Element, frame: &Frame, background: bool) -> Option<String> {
    let style = frame.window.get_computed_style(el).ok()??;
    let prop = |name: Name| dom::property(&style, name);
    let mut value = prop(Name::Content);
    if background && !value.starts_with("url(") {
        value = prop(Name::BackgroundImage);
    }
    let url = value.strip_prefix("url(")?.trim_end_matches(')').trim_matches(['"', '\'']);
    (!url.starts_with("data:") && !url.is_empty()).then(|| url.to_owned())
}

/// The text of the elements named by `aria-labelledby`.
pub(super) fn labelled_by(el: &Element, ids: &str) -> Option<String> {
    let doc: Document = proto::owner_document(&el)?;
    // In a shadow tree the ids are the shadow root's (a design system's
    // combobox labelled by its own `<label id="label">`).
    let root = proto::get_root_node(&el);
    let in_shadow = proto::node_type(&root) == dom::FRAGMENT_NODE;
    let find = |id: &str| {
        if in_shadow {
            let quoted = id.replace('\\', "\\\\").replace('"', "\\\"");
            proto::query_selector(&root, &format!("[id=\"{quoted}\"]")).ok().flatten()
        } else {
            proto::get_element_by_id(&doc, id)
        }
    };
    // Through slots: the label's text may be the host's light content.
    let text: Vec<String> = ids
        .split_whitespace()
        .filter_map(find)
        .filter_map(|e| dom::label_text_of(e.unchecked_ref()).or_else(|| proto::text_content(&e)))
        .map(|t| text::collapse(&t))
        .collect();
    Some(text.join(" ")).filter(|t| !t.is_empty())
}

/// The symbols CSS draws controls with, and their names (data).
const SYMBOLS: &str = include_str!("symbols.txt");

/// The name of the symbol a `::before` or `::after` of `el` (or of an
/// element inside it) draws by CSS `content` (`.destroy::after { content:
/// '×' }` → `close`), from [`SYMBOLS`].
pub(super) fn drawn_symbol(el: &Element) -> Option<String> {
    let window = dom::window_of(el)?;
    let mut todo = vec![el.clone()];
    let mut looked = 0;
    while let Some(e) = todo.pop() {
        // Each look is two style reads of pseudo-elements: a few only.
        looked += 1;
        if looked > 4 {
            break;
        }
        for pseudo in ["::before", "::after"] {
            let Ok(Some(style)) = window.get_computed_style_with_pseudo_elt(&e, pseudo) else {
                continue;
            };
            let content = dom::property(&style, Name::Content);
            if let Some(name) = symbol_name(&content) {
                return Some(name.to_owned());
            }
        }
        let mut child = e.last_element_child();
        while let Some(c) = child {
            todo.push(c.clone());
            child = c.previous_element_sibling();
        }
    }
    None
}

/// The name [`SYMBOLS`] gives a computed `content` value (`"×"`).
fn symbol_name(content: &str) -> Option<&'static str> {
    let drawn = content.strip_prefix('"')?.strip_suffix('"')?.trim();
    if drawn.is_empty() {
        return None;
    }
    SYMBOLS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(char::is_whitespace))
        .find(|(symbol, _)| *symbol == drawn)
        .map(|(_, name)| name.trim())
}

impl Walk {
    /// Names the element of line `i` by its class when nothing else names
    /// it (an icon-only control drawn from a sprite or an icon font).
    pub(super) fn name_by_class(&mut self, i: usize, el: &Element) {
        let Line::Element(seen) = &self.lines[i] else { return };
        let unnamed = seen.text.trim().is_empty()
            && seen.icon.is_none()
            && seen.aria_label.is_none()
            && seen.title.is_none()
            && seen.label.is_none()
            && seen.placeholder.is_none()
            && !matches!(seen.tag.as_str(), "input" | "select" | "textarea");
        if !unnamed {
            return;
        }
        let hint = Self::class_hint(el).or_else(|| drawn_symbol(el));
        if let Line::Element(seen) = &mut self.lines[i] {
            seen.icon = hint;
        }
    }

    /// A name for a listed element that has none (no text, label, title or
    /// image): the class of it or of what it holds that says what it does
    /// (`ui-spinner-up` → `spinner-up`, `fa-trash` → `trash`).
    pub(super) fn class_hint(el: &Element) -> Option<String> {
        const SAYS: &[&str] = &[
            "up",
            "down",
            "prev",
            "previous",
            "next",
            "plus",
            "minus",
            "add",
            "remove",
            "close",
            "delete",
            "trash",
            "star",
            "edit",
            "search",
            "menu",
            "left",
            "right",
            "increment",
            "decrement",
            "more",
            "less",
            "expand",
            "collapse",
            "play",
            "pause",
            "like",
            "share",
            "settings",
            "cart",
            "heart",
            // Text editors' toolbars (Quill's `ql-bold`, `ql-color`).
            "bold",
            "italic",
            "underline",
            "strike",
            "color",
            "background",
            "align",
            "link",
            "image",
            "list",
            "indent",
            "clean",
            "undo",
            "redo",
            "back",
            "forward",
            "destroy",
            "chevron",
            "arrow",
        ];
        let mut todo = vec![el.clone()];
        let mut looked = 0;
        while let Some(e) = todo.pop() {
            looked += 1;
            if looked > 12 {
                break;
            }
            let mut class = dom::get(&e, Name::Class).unwrap_or_default();
            // An icon named by its sprite (`<svg><use href="#chevron-left">`)
            // or a `data-icon` says the same.
            for attr in ["data-icon", "href", "xlink:href"] {
                if let Some(v) = proto::get_attribute(&e, attr) {
                    if attr == "data-icon" || proto::local_name(&e) == "use" {
                        let id = v.rsplit('#').next().unwrap_or_default();
                        class.push(' ');
                        class.push_str(id);
                    }
                }
            }
            for token in class.split_whitespace() {
                let words: Vec<&str> = token.split(['-', '_']).collect();
                if words.iter().any(|w| SAYS.contains(&w.to_ascii_lowercase().as_str())) {
                    let bare =
                        ["ui-", "fa-", "icon-", "glyphicon-", "bi-", "mdi-", "material-", "ql-"]
                            .iter()
                            .fold(token, |t, p| t.strip_prefix(p).unwrap_or(t));
                    return Some(bare.chars().take(40).collect());
                }
            }
            let mut child = e.last_element_child();
            while let Some(c) = child {
                todo.push(c.clone());
                child = c.previous_element_sibling();
            }
        }
        None
    }

    /// Names the innermost listed element after the icon `el` when nothing
    /// named it before (an icon-only control, or an icon before the text).
    pub(super) fn note_icon(&mut self, el: &Element, frame: &Frame) {
        let Some(&i) = self.open.last() else { return };
        let Line::Element(seen) = &self.lines[i] else {
            return;
        };
        if seen.icon.is_some() || !seen.text.trim().is_empty() {
            return;
        }
        let name = icon_name(el, frame);
        if let Line::Element(seen) = &mut self.lines[i] {
            seen.icon = name;
        }
    }

    /// An icon font's ligature, before any text of the open element: its
    /// icon name.
    pub(super) fn note_ligature(&mut self, el: &Element) {
        let Some(&i) = self.open.last() else { return };
        let Line::Element(seen) = &mut self.lines[i] else { return };
        if seen.icon.is_some() || !seen.text.trim().is_empty() {
            return;
        }
        let word = text::collapse(&proto::text_content(&el).unwrap_or_default());
        if !word.is_empty() && word.len() <= 40 && !word.contains(' ') {
            seen.icon = Some(word);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn drawn_symbols_have_names() {
        assert_eq!(super::symbol_name("\"×\""), Some("close"));
        assert_eq!(super::symbol_name("\"✕\""), Some("close"));
        assert_eq!(super::symbol_name("none"), None);
        assert_eq!(super::symbol_name("\"Delete\""), None);
    }
}
