//! Listing rules: which elements become numbered lines — interactive by
//! tag, attribute or role, plain boxes listed for their pointer cursor or
//! listeners (a label too, when it labels no control), nested controls
//! inside them (own icons, groups of targets, delegating lists), and hidden
//! native controls replaced by their labels — but not a transparent one
//! laid over what its label draws, which is the top element where a person
//! clicks and is listed itself (`style.rs` keeps it in the walk).

use super::*;

/// ARIA roles that make an element interactive.
pub(super) const INTERACTIVE_ROLES: &[&str] = &[
    "button",
    "link",
    "checkbox",
    "radio",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "combobox",
    "switch",
    "slider",
    "textbox",
    "listbox",
    "searchbox",
    "spinbutton",
    "treeitem",
];

/// Whether the `li`'s list has listeners of its own (a sortable list, a
/// menu delegating to its items).
pub(super) fn list_listens(li: &Element) -> bool {
    proto::parent_element(li).is_some_and(|ul| {
        matches!(proto::local_name(&ul).as_str(), "ul" | "ol") && crate::listeners::has(&ul)
    })
}

/// An `<input role=combobox>`.
pub(super) fn is_combobox_input(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && proto::get_attribute(&el, "role").is_some_and(|r| r.eq_ignore_ascii_case("combobox"))
}

/// Whether an element is interactive by its tag, its attributes or its role
/// (the `cursor: pointer` rule is the caller's).
pub(super) fn is_interactive(el: &Element, tag: &str, has_attrs: bool) -> bool {
    let by_tag = match tag {
        "a" => dom::has(el, Name::Href),
        "button" | "select" | "textarea" | "summary" => true,
        // (A read-only presentational input in front of a field is a
        // picture, not a field: `visual_label::is_decoy`.)
        "input" => {
            !dom::get(el, Name::Type).is_some_and(|t| t.trim().eq_ignore_ascii_case("hidden"))
                && !crate::visual_label::is_decoy(el)
        }
        // A label is listed when it is the way to its control: the
        // control itself is hidden (a styled checkbox); otherwise the
        // control is listed, named by the label.
        "label" => el
            .unchecked_ref::<web_sys::HtmlLabelElement>()
            .control()
            .is_some_and(|c| control_hidden(&c)),
        _ => false,
    };
    if by_tag {
        return true;
    }
    if !has_attrs {
        return false;
    }
    if let Some(role) = dom::get(el, Name::Role) {
        let first = role.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
        if INTERACTIVE_ROLES.contains(&first.as_str()) {
            return true;
        }
    }
    if let Some(editable) = dom::get(el, Name::ContentEditable) {
        let e = editable.trim().to_ascii_lowercase();
        if e.is_empty() || e == "true" || e == "plaintext-only" {
            return true;
        }
    }
    if dom::get(el, Name::TabIndex)
        .and_then(|t| t.trim().parse::<i32>().ok())
        .is_some_and(|t| t >= 0)
    {
        return true;
    }
    // Items of drag-and-drop lists (`drag_and_drop` needs their numbers).
    dom::has(el, Name::OnClick) || dom::get(el, Name::Draggable).as_deref() == Some("true")
}

/// Whether a `<label>` is the label of a control (its `for` or a control
/// inside it).
pub(super) fn labels_a_control(label: &Element) -> bool {
    label.unchecked_ref::<web_sys::HtmlLabelElement>().control().is_some()
}

/// Whether a label's control cannot be seen or used directly.
pub(super) fn control_hidden(control: &web_sys::HtmlElement) -> bool {
    let r = proto::get_bounding_client_rect(&control);
    if r.width() < 2.0 || r.height() < 2.0 {
        return true;
    }
    let Some(style) =
        dom::window_of(control).and_then(|w| w.get_computed_style(control).ok().flatten())
    else {
        return false;
    };
    let prop = |name: Name| dom::property(&style, name);
    // A transparent control laid over what its label draws (a todo's
    // checkbox over its circle) is used directly where it is the top
    // element: it is listed itself (`style.rs`), named by the label.
    (dom::decimal(&prop(Name::Opacity)).is_some_and(|o| o <= 0.01)
        && !(matches!(prop(Name::Position).as_str(), "absolute" | "fixed") && on_top(control)))
        || prop(Name::Visibility) == "hidden"
        || prop(Name::Display) == "none"
}

/// Whether a click at the centre of `el`'s box lands on it (out of the
/// viewport, where no hit test answers: taken as yes, as the walk lists
/// what it cannot hit-test there).
fn on_top(el: &Element) -> bool {
    let r = proto::get_bounding_client_rect(el);
    let (x, y) = (r.x() + r.width() / 2.0, r.y() + r.height() / 2.0);
    dom::element_at(el, x, y).is_none_or(|hit| dom::hit_belongs(el, &hit))
}

impl Walk {
    /// Whether the innermost listed element is a plain box (not a native
    /// control, link, editor or ARIA widget): listed for its pointer
    /// cursor or its listeners.
    pub(super) fn inside_plain(&self) -> bool {
        let Some(&i) = self.open.last() else { return false };
        let (Line::Element(outer), Some(node)) = (&self.lines[i], &self.nodes[i]) else {
            return false;
        };
        // A structural role (a tab's panel, a region) names a part of
        // the page, not a control: listed for its listeners, it is a box
        // like a plain one (its links are their own).
        let structural = outer.role.as_deref().is_none_or(|r| {
            matches!(
                r,
                "tabpanel"
                    | "region"
                    | "group"
                    | "article"
                    | "document"
                    | "main"
                    | "complementary"
                    | "list"
                    | "listitem"
                    | "presentation"
                    | "none"
            )
        });
        structural
            && !matches!(
                outer.tag.as_str(),
                "a" | "button" | "input" | "select" | "textarea" | "summary" | "label" | "option"
            )
            && !dom::has(node, Name::ContentEditable)
    }

    /// Whether line `i` is a plain listed box (see [`Walk::inside_plain`]).
    pub(super) fn plain_line(&self, i: usize) -> bool {
        let (Line::Element(outer), Some(node)) = (&self.lines[i], &self.nodes[i]) else {
            return false;
        };
        outer.role.is_none()
            && !matches!(
                outer.tag.as_str(),
                "a" | "button" | "input" | "select" | "textarea" | "summary" | "label" | "option"
            )
            && !dom::has(node, Name::ContentEditable)
            && !dom::has(node, Name::TabIndex)
    }

    /// Whether `el` covers less than half of the innermost listed
    /// element's box (a part of it, not the whole under another name).
    pub(super) fn small_inside(&self, el: &Element) -> bool {
        let Some(Line::Element(outer)) = self.open.last().map(|&i| &self.lines[i]) else {
            return false;
        };
        let r = proto::get_bounding_client_rect(el);
        r.width() * r.height() < outer.rect.width * outer.rect.height * 0.5
    }

    /// Whether the innermost listed element was listed only for its
    /// listeners (no pointer cursor): a pointer inside it is its own.
    pub(super) fn inside_listener_only(&self) -> bool {
        self.open.last().is_some_and(|i| self.listener_only.last() == Some(i))
    }

    /// Whether `el` is a small icon that names itself (an image with
    /// `alt`, an `svg` or CSS icon with a label or title): inside a plain
    /// clickable box, a control of its own.
    pub(super) fn own_icon(&self, el: &Element, tag: &str, st: StyleBits) -> bool {
        let named = || {
            dom::has(el, Name::AriaLabel)
                || dom::has(el, Name::Title)
                || (tag == "img" && dom::attr_named(el, Name::Alt).is_some_and(|a| !a.is_empty()))
        };
        let icon = matches!(tag, "img" | "svg" | "i") || st.image;
        if !icon || !named() {
            return false;
        }
        let r = proto::get_bounding_client_rect(el);
        r.width() > 0.0 && r.width() <= 48.0 && r.height() <= 48.0
    }

    /// A box listed only for its listeners that holds listed elements and
    /// no text of its own delegates its listeners to them (a list whose
    /// items are listed): not a control itself. Its line becomes empty
    /// text (the lines after it keep their places).
    pub(super) fn demote_delegate(&mut self, i: usize, el: &Element) {
        let Line::Element(seen) = &self.lines[i] else { return };
        let holds = self.lines[i + 1..].iter().any(|l| matches!(l, Line::Element(_)));
        if !holds || !seen.text.trim().is_empty() || seen.icon.is_some() {
            return;
        }
        let in_viewport = seen.in_viewport;
        self.lines[i] = Line::Text { text: String::new(), in_viewport };
        self.nodes[i] = None;
        self.opened.delete(el);
    }

    /// Whether `el`, a clickable box inside an element listed only for its
    /// pointer cursor (a `div` of "Reply" and "Forward"), is one of several
    /// targets there: it has text and is less than half as wide.
    pub(super) fn part_of_group(&self, el: &Element) -> bool {
        let Some(Line::Element(outer)) = self.open.last().map(|&i| &self.lines[i]) else {
            return false;
        };
        if outer.role.is_some()
            || matches!(
                outer.tag.as_str(),
                "a" | "button" | "input" | "select" | "textarea" | "summary" | "label" | "option"
            )
        {
            return false;
        }
        let r = proto::get_bounding_client_rect(&el);
        r.width() > 0.0
            && r.width() < outer.rect.width * 0.5
            && proto::text_content(&el).is_some_and(|t| !t.trim().is_empty())
    }
}
