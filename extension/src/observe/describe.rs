//! Describing: what the model is told about one listed element (its
//! name, value, state, options and where activating it navigates).

use super::*;
use crate::visual_label;

/// The attributes [`Walk::describe`] may read, asked about at once
/// ([`proto::attributes_present`]): only those present are read.
const DESCRIBED: [Name; 24] = [
    Name::Type,
    Name::Required,
    Name::ReadOnly,
    Name::Multiple,
    Name::Role,
    Name::NameAttr,
    Name::Placeholder,
    Name::AriaLabel,
    Name::Title,
    Name::AriaInvalid,
    Name::AriaExpanded,
    Name::Href,
    Name::ContentEditable,
    Name::AriaReadOnly,
    Name::AriaMultiSelectable,
    Name::AriaChecked,
    Name::AriaValueText,
    Name::AriaValueNow,
    Name::AriaValueMin,
    Name::AriaValueMax,
    Name::Min,
    Name::Max,
    Name::AriaSelected,
    Name::AriaLabelledBy,
];

thread_local! {
    static DESCRIBED_NAMES: js_sys::Array = DESCRIBED.iter().map(|&n| dom::name_js(n)).collect();
}

/// The attributes of an element that [`DESCRIBED`] says it has.
struct Present<'a> {
    el: &'a Element,
    bits: u32,
}

impl Present<'_> {
    fn has(&self, name: Name) -> bool {
        let i = DESCRIBED.iter().position(|&n| n as usize == name as usize);
        i.is_some_and(|i| self.bits & (1 << i) != 0)
    }
    /// `dom::get`, for an attribute it has.
    fn get(&self, name: Name) -> Option<String> {
        self.has(name).then(|| dom::get(self.el, name)).flatten()
    }
    /// `dom::attr_named`, for an attribute it has.
    fn named(&self, name: Name) -> Option<String> {
        self.has(name).then(|| dom::attr_named(self.el, name)).flatten()
    }
}

impl Walk {
    /// Reads what the model is told about an element. Not inlined into
    /// the visit of every element (`visit_tagged`), by rustc nor by
    /// binaryen (`--no-inline` in `scripts/build-extension.sh`): only listed
    /// elements are described, and V8 optimizes the visit sooner while it
    /// is small (a first walk 6–12% shorter, BENCHMARKS.md).
    #[inline(never)]
    pub(super) fn describe(&self, el: &Element, tag: &str, rect: Rect, in_viewport: bool) -> Seen {
        let attrs =
            Present { el, bits: DESCRIBED_NAMES.with(|n| proto::attributes_present(el, n)) };
        let disabled = dom::is_disabled(el, tag);
        // A disabled element is reported, not offered: it gets no number.
        let index = if disabled { 0 } else { registry::number_of(el) };
        let input_type = (tag == "input").then(|| {
            attrs
                .named(Name::Type)
                .map_or_else(|| "text".to_owned(), |t| t.trim().to_ascii_lowercase())
        });
        let role = attrs
            .named(Name::Role)
            .and_then(|r| r.split_whitespace().next().map(str::to_ascii_lowercase));
        let mut seen = Seen {
            index,
            tag: tag.to_owned(),
            name: attrs.named(Name::NameAttr),
            placeholder: attrs.named(Name::Placeholder),
            aria_label: attrs.named(Name::AriaLabel),
            title: attrs.named(Name::Title),
            disabled,
            invalid: attrs.named(Name::AriaInvalid).is_some_and(|v| v.eq_ignore_ascii_case("true")),
            expanded: attrs.named(Name::AriaExpanded).map(|v| v.eq_ignore_ascii_case("true")),
            rect,
            in_viewport,
            ..Seen::default()
        };
        if tag == "a" {
            seen.href = attrs.named(Name::Href).and_then(|h| text::shown_href(&h, &self.origin));
        }
        seen.target = navigation_target(el, tag, input_type.as_deref());
        let field = matches!(tag, "input" | "select" | "textarea");
        if field {
            seen.required = attrs.has(Name::Required);
            seen.label = self.labels.borrow_mut().of(el);
            seen.readonly = tag != "select" && attrs.has(Name::ReadOnly);
            seen.multiple = tag == "select" && attrs.has(Name::Multiple);
        } else if let Some(e) = attrs.get(Name::ContentEditable) {
            let e = e.trim().to_ascii_lowercase();
            seen.editor = e.is_empty() || e == "true" || e == "plaintext-only";
        }
        let aria_true =
            |name: Name| attrs.named(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        seen.readonly |= aria_true(Name::AriaReadOnly);
        seen.multiple |= aria_true(Name::AriaMultiSelectable);
        match (tag, input_type.as_deref()) {
            ("input", Some("checkbox" | "radio")) => {
                seen.checked = el.unchecked_ref::<HtmlInputElement>().checked();
            }
            ("input", Some("password")) => {}
            ("input", Some(_)) => {
                seen.value = Some(el.unchecked_ref::<HtmlInputElement>().value());
            }
            ("textarea", _) => {
                seen.value = Some(el.unchecked_ref::<HtmlTextAreaElement>().value());
            }
            ("select", _) => read_select(el, &mut seen),
            _ => {}
        }
        if let Some(r) = &role {
            if matches!(
                r.as_str(),
                "checkbox"
                    | "switch"
                    | "radio"
                    | "menuitemcheckbox"
                    | "menuitemradio"
                    | "option"
                    | "tab"
            ) && !field
            {
                seen.checked =
                    attrs.named(Name::AriaChecked).is_some_and(|v| v.eq_ignore_ascii_case("true"));
            }
        }
        // A slider says where it stands and between what: its input's
        // value, or an ARIA slider's `aria-valuetext` / `aria-valuenow`
        // (a range slider library's handle).
        let aria_slider = !field
            && role.as_deref().is_some_and(|r| matches!(r, "slider" | "spinbutton" | "scrollbar"));
        if aria_slider {
            let text = attrs.named(Name::AriaValueText).filter(|t| !t.trim().is_empty());
            seen.value = text.or_else(|| attrs.named(Name::AriaValueNow).map(trim_number));
        }
        let range = input_type.as_deref() == Some("range");
        if let (true, Some(v)) = (aria_slider || range, seen.value.as_mut()) {
            let (lo, hi) = if range {
                (
                    attrs.named(Name::Min).map_or_else(|| "0".to_owned(), trim_number),
                    attrs.named(Name::Max).map_or_else(|| "100".to_owned(), trim_number),
                )
            } else {
                (
                    attrs.named(Name::AriaValueMin).map(trim_number).unwrap_or_default(),
                    attrs.named(Name::AriaValueMax).map(trim_number).unwrap_or_default(),
                )
            };
            if !lo.is_empty() && !hi.is_empty() {
                v.push_str(&format!(" of {lo}–{hi}"));
            }
        }
        seen.selected =
            attrs.named(Name::AriaSelected).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if tag == "summary" && seen.expanded.is_none() {
            seen.expanded = proto::parent_element(&el)
                .filter(|p| proto::local_name(&p) == "details")
                .map(|p| dom::has(&p, Name::Open));
        }
        if field && !seen.invalid && !seen.disabled {
            // The browser's own verdict, once the person has typed something.
            let has_value = seen.value.as_ref().is_some_and(|v| !v.is_empty());
            seen.invalid = has_value && dom::matches(el, Name::Invalid);
        }
        if let Some(ids) = attrs.named(Name::AriaLabelledBy).filter(|_| seen.aria_label.is_none()) {
            seen.label = labelled_by(el, &ids).or(seen.label);
        }
        // A field, editor, or combobox, list box or slider of a library,
        // named by nothing of its own (no `<label>`, `aria-label` or
        // `aria-labelledby`): what a person reads as its label
        // (`visual_label`). A title that reads as code names nothing.
        let widget = role.as_deref().is_some_and(|r| {
            matches!(r, "combobox" | "listbox" | "slider" | "spinbutton" | "searchbox" | "textbox")
        });
        let input_button = matches!(
            input_type.as_deref(),
            Some("submit" | "button" | "reset" | "image" | "hidden")
        );
        if field
            && !input_button
            && seen.title.as_deref().is_some_and(|t| !visual_label::reads_as_words(t))
        {
            seen.title = None;
        }
        let unnamed = seen.label.is_none() && seen.aria_label.is_none();
        if unnamed && !input_button && (field || widget || seen.editor) {
            seen.label = visual_label::inferred(el);
        }
        seen.role = role;
        if tag == "label" && seen.role.is_none() {
            // Listed for a hidden checkbox or radio (a styled one): it says
            // what it is and whether it is checked.
            let control = el.unchecked_ref::<web_sys::HtmlLabelElement>().control();
            if let Some(c) = control.filter(|c| proto::local_name(c) == "input") {
                let input = c.unchecked_ref::<HtmlInputElement>();
                let kind = input.type_();
                if matches!(kind.as_str(), "checkbox" | "radio") {
                    seen.checked = input.checked();
                    // A switch says so (`<input type=checkbox role=switch>`).
                    let switch = proto::get_attribute(&c, "role")
                        .is_some_and(|r| r.trim().eq_ignore_ascii_case("switch"));
                    seen.role = Some(if switch { "switch".to_owned() } else { kind });
                }
            }
        }
        seen.input_type = input_type;
        seen
    }
}

/// A number as a person reads it: `20.0` → `20`, `1.50` → `1.5`.
pub(super) fn trim_number(v: String) -> String {
    let t = v.trim();
    match dom::decimal(t) {
        Some(n) if n.is_finite() => {
            let mut s = crate::json::float_text(n);
            if s.contains('e') {
                s = t.to_owned();
            }
            s
        }
        _ => t.to_owned(),
    }
}

/// The options of a `<select>` and the chosen one, when it is not the first
/// (of a `multiple` one: all the chosen ones).
pub(crate) fn read_select(el: &Element, seen: &mut Seen) {
    let select = el.unchecked_ref::<web_sys::HtmlSelectElement>();
    let count = select.length();
    let option_text = |i: u32| {
        select
            .item(i)
            .map(|o| o.unchecked_ref::<web_sys::HtmlOptionElement>().text())
            .unwrap_or_default()
    };
    seen.option_count = count as usize;
    seen.options = text::options_shown((0..count).map(option_text));
    let chosen = select.selected_index();
    if select.multiple() {
        // Every chosen option of a list box (none is chosen by default).
        let chosen_one = |i: &u32| {
            let option = select.item(*i);
            option.is_some_and(|o| o.unchecked_ref::<web_sys::HtmlOptionElement>().selected())
        };
        let all: Vec<String> =
            (0..count).filter(chosen_one).map(|i| text::collapse(&option_text(i))).collect();
        if !all.is_empty() {
            seen.value = Some(all.join(", "));
        }
    } else if chosen > 0 {
        seen.value = Some(option_text(chosen as u32));
    }
}

/// Where activating `el` navigates: a link's resolved address; for a
/// submit button (its `formaction`, else its form's `action`) or a text
/// field whose Enter submits its form, the form's resolved address.
pub(super) fn navigation_target(
    el: &Element,
    tag: &str,
    input_type: Option<&str>,
) -> Option<String> {
    // The form's `action` through its prototype: a field named `action`
    // shadows the property (crate::proto).
    let form_action = |form: Option<web_sys::HtmlFormElement>| form.map(|f| proto::form_action(&f));
    let url = match (tag, input_type) {
        ("a", _) => dom::has(el, Name::Href)
            .then(|| el.unchecked_ref::<web_sys::HtmlAnchorElement>().href()),
        ("button", _) => {
            let b = el.unchecked_ref::<web_sys::HtmlButtonElement>();
            if b.type_() != "submit" {
                None
            } else if dom::has(el, Name::FormAction) {
                Some(b.form_action())
            } else {
                form_action(b.form())
            }
        }
        ("input", Some("submit" | "image")) => {
            let i = el.unchecked_ref::<HtmlInputElement>();
            if dom::has(el, Name::FormAction) {
                Some(i.form_action())
            } else {
                form_action(i.form())
            }
        }
        ("input", Some(t))
            if !matches!(
                t,
                "checkbox" | "radio" | "file" | "button" | "reset" | "hidden" | "range" | "color"
            ) =>
        {
            form_action(el.unchecked_ref::<HtmlInputElement>().form())
        }
        _ => None,
    }?;
    let url = url.trim();
    (url.starts_with("http://") || url.starts_with("https://")).then(|| url.to_owned())
}
