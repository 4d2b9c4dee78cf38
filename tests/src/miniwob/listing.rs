//! Reading Errand's element list the way a model does: `12<button>Submit`,
//! `3<checkbox=abc checked>`, `5<email="Work e-mail" value="a@b.c">`,
//! `7<a href="/x">`, `8<tab="Tab #2" collapsed>`, `9>Pricing` (the format is
//! `extension/src/text.rs`'s). The kind word of an input (`email`,
//! `checkbox`…) reads back as tag `input` with that `type`, a role written as
//! the kind (`tab`, `option`…) as attribute `role`, the name (`=…`) as
//! attribute `label`; the older shapes (`[12]<button>Submit</button>`, with
//! `type=` attributes) are read too.

use crate::model::elements;

/// One numbered element of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub index: u32,
    pub tag: String,
    pub attrs: Vec<(String, String)>,
    /// The visible text between the tags, whitespace collapsed.
    pub text: String,
}

impl Listed {
    /// An attribute's value (`type`, `label`, `placeholder`…).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Whether the element has the flag attribute `name` (`checked`, `disabled`).
    pub fn flag(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// The `type` of an input (`text` when absent).
    pub fn input_type(&self) -> Option<&str> {
        (self.tag == "input").then(|| self.attr("type").unwrap_or("text"))
    }

    /// What a person would call it: its text, else its label, aria-label,
    /// placeholder, title or value.
    pub fn name(&self) -> &str {
        if !self.text.is_empty() {
            return &self.text;
        }
        ["label", "aria-label", "placeholder", "title", "value"]
            .iter()
            .find_map(|a| self.attr(a))
            .unwrap_or("")
    }

    /// Whether this is a text field a person types into.
    pub fn is_text_field(&self) -> bool {
        self.tag == "textarea"
            || matches!(
                self.input_type(),
                Some("text" | "input" | "email" | "password" | "search" | "tel" | "url" | "number")
            )
    }
}

/// One line of the page as listed: a numbered element, or the text a person
/// reads between elements (headings, labels, values).
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Element(Listed),
    Text(String),
}

/// The page's lines in order, elements and text between them (multi-layout
/// forms, tweets, tickets: which text goes with which element).
pub fn lines(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    for line in text.lines() {
        let els = parse(line);
        if els.is_empty() {
            let t = collapse(line.trim_start_matches('#'));
            if !t.is_empty() {
                out.push(Line::Text(t));
            }
        } else {
            out.extend(els.into_iter().map(Line::Element));
        }
    }
    out
}

/// Parses every numbered element of `text`.
pub fn parse(text: &str) -> Vec<Listed> {
    elements(text).into_iter().map(|(index, desc)| parse_one(index, &desc)).collect()
}

/// Input types written as the element's kind (`[3]<email …>`).
const INPUT_KINDS: &[&str] = &[
    "email",
    "password",
    "number",
    "search",
    "tel",
    "url",
    "date",
    "time",
    "datetime-local",
    "month",
    "week",
    "color",
    "range",
    "file",
    "checkbox",
    "radio",
];

/// ARIA roles written as the element's kind (`[4]<tab "Tab #2" collapsed>`).
const ROLE_KINDS: &[&str] = &[
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "combobox",
    "switch",
    "slider",
    "spinbutton",
    "textbox",
    "searchbox",
    "listbox",
    "treeitem",
    "gridcell",
];

fn parse_one(index: u32, desc: &str) -> Listed {
    let mut desc = desc.trim().trim_start_matches(':').trim();
    // Drop a trailing position note: `(right, 900px)`.
    for note in [" (below", " (above", " (left", " (right", " (hidden by scrolling"] {
        if let Some(at) = desc.rfind(note) {
            if desc.ends_with(')') {
                desc = desc[..at].trim_end();
            }
        }
    }
    let mut listed = Listed { index, tag: String::new(), attrs: Vec::new(), text: String::new() };
    // A plain link is written without its kind: `8>Pricing`.
    if let Some(text) = desc.strip_prefix('>') {
        listed.tag = "a".into();
        listed.text = collapse(text);
        return listed;
    }
    let Some(rest) = desc.strip_prefix('<') else {
        listed.text = collapse(desc);
        return listed;
    };
    let tag_end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '>' | '/' | '='))
        .unwrap_or(rest.len());
    listed.tag = rest[..tag_end].to_lowercase();
    let (mut attrs, after) = read_attrs(&rest[tag_end..]);
    if INPUT_KINDS.contains(&listed.tag.as_str()) {
        attrs.insert(0, ("type".to_owned(), std::mem::replace(&mut listed.tag, "input".into())));
    } else if ROLE_KINDS.contains(&listed.tag.as_str()) {
        // `<tab>` is an element with `role=tab`.
        attrs.insert(0, ("role".to_owned(), listed.tag.clone()));
    }
    listed.attrs = attrs;
    let inner = match after.rfind("</") {
        Some(close) => &after[..close],
        None => after,
    };
    listed.text = collapse(&strip_tags(inner));
    listed
}

/// Reads `k=v k="v w" flag>` up to the closing `>`; returns the attributes and
/// what follows the `>`.
fn read_attrs(s: &str) -> (Vec<(String, String)>, &str) {
    let mut attrs = Vec::new();
    let bytes: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut consumed = s.len();
    while i < bytes.len() {
        let c = bytes[i];
        if c == '>' {
            consumed = s.char_indices().nth(i).map(|(b, _)| b + 1).unwrap_or(s.len());
            break;
        }
        if c.is_whitespace() || c == '/' {
            i += 1;
            continue;
        }
        if c == '"' {
            // A quoted name without a key: the element's label.
            i += 1;
            let mut value = String::new();
            while i < bytes.len() && bytes[i] != '"' {
                value.push(bytes[i]);
                i += 1;
            }
            i += 1;
            attrs.push(("label".to_owned(), value));
            continue;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_whitespace() && bytes[i] != '=' && bytes[i] != '>' {
            i += 1;
        }
        // `<button=Close>`: the name, written against the kind.
        let key: String = if i == start && attrs.is_empty() {
            "label".to_owned()
        } else {
            bytes[start..i].iter().collect()
        };
        let mut value = String::new();
        if i < bytes.len() && bytes[i] == '=' {
            i += 1;
            if i < bytes.len() && (bytes[i] == '"' || bytes[i] == '\'') {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if bytes[i] == '\\' && i + 1 < bytes.len() {
                        i += 1;
                    }
                    value.push(bytes[i]);
                    i += 1;
                }
                i += 1;
            } else {
                while i < bytes.len() && !bytes[i].is_whitespace() && bytes[i] != '>' {
                    value.push(bytes[i]);
                    i += 1;
                }
            }
        }
        attrs.push((key.to_lowercase(), value));
    }
    let after = if consumed <= s.len() { &s[consumed..] } else { "" };
    (attrs, after)
}

fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tags_attributes_and_text() {
        // The older shape, with closing tags and `type=` attributes.
        let list = parse(
            "# Heading\n[3]<button>Submit</button>\n  [4]<input type=checkbox label=\"ab cd\" checked>\n\
             [5]<a href=\"/x\">Next page</a> (below, 900px)\n[6]<textarea placeholder='Your note'>",
        );
        assert_eq!(list.len(), 4, "{list:#?}");
        assert_eq!(
            (list[0].index, list[0].tag.as_str(), list[0].text.as_str()),
            (3, "button", "Submit")
        );
        assert_eq!(list[1].input_type(), Some("checkbox"));
        assert_eq!(list[1].name(), "ab cd");
        assert!(list[1].flag("checked"));
        assert_eq!(list[2].text, "Next page");
        assert_eq!(list[3].name(), "Your note");
        assert!(list[3].is_text_field());
    }

    #[test]
    fn reads_the_compact_shape() {
        let list = parse(
            "At the top, 900px more below\n## Sign in\n[3]<button>Submit\n*[4]<checkbox \"ab cd\" checked>\n\
             --- 1 screen below ---\n[5]<a href=\"/x\">\n[6]<textarea \"Your note\" value=\"hi\">\n\
             [7]<input \"Name\" placeholder=\"Ada\"> (right, 20px)\n[8]<password \"Password\" required>\n\
             [9]<select \"Size\">S|M|L\n<button disabled>Pay",
        );
        assert_eq!(list.len(), 7, "{list:#?}");
        assert_eq!((list[0].index, list[0].tag.as_str(), list[0].name()), (3, "button", "Submit"));
        assert_eq!(list[1].tag, "input");
        assert_eq!(list[1].input_type(), Some("checkbox"));
        assert_eq!(list[1].name(), "ab cd");
        assert!(list[1].flag("checked"));
        assert_eq!(list[2].attr("href"), Some("/x"));
        assert_eq!((list[3].name(), list[3].attr("value")), ("Your note", Some("hi")));
        assert!(list[3].is_text_field());
        assert_eq!(list[4].input_type(), Some("text"));
        assert_eq!((list[4].name(), list[4].text.as_str()), ("Name", ""));
        assert!(list[4].is_text_field());
        assert_eq!(list[5].input_type(), Some("password"));
        assert!(list[5].flag("required"));
        assert_eq!((list[6].tag.as_str(), list[6].text.as_str()), ("select", "S|M|L"));
    }

    #[test]
    fn reads_the_bare_number_shape_and_roles_as_kinds() {
        let list = parse(
            "3<button>Submit\n*4<tab \"Tab #2\" collapsed>\n\"5<a>forged\"\n6<email value=\"a@b.c\">",
        );
        assert_eq!(list.len(), 3, "{list:#?}");
        assert_eq!((list[0].index, list[0].tag.as_str(), list[0].name()), (3, "button", "Submit"));
        assert_eq!(
            (list[1].index, list[1].attr("role"), list[1].name()),
            (4, Some("tab"), "Tab #2")
        );
        assert_eq!((list[2].index, list[2].input_type()), (6, Some("email")));
        assert!(list[2].is_text_field());
    }

    #[test]
    fn reads_names_against_the_kind_and_kindless_links() {
        let list = parse(
            "Scroll: 900px below\n3<button=Close>×\n*4<checkbox=\"Keep me signed in\" checked>\n\
             5>Pricing\n6<input=required required>\n\"7>forged\"\n8<a=\"Buy item 3\">Buy",
        );
        assert_eq!(list.len(), 5, "{list:#?}");
        assert_eq!(
            (list[0].tag.as_str(), list[0].attr("label"), list[0].name()),
            ("button", Some("Close"), "×")
        );
        assert_eq!((list[1].input_type(), list[1].name()), (Some("checkbox"), "Keep me signed in"));
        assert!(list[1].flag("checked"));
        assert_eq!((list[2].index, list[2].tag.as_str(), list[2].name()), (5, "a", "Pricing"));
        assert_eq!((list[3].name(), list[3].flag("required")), ("required", true));
        assert_eq!(
            (list[4].index, list[4].attr("label"), list[4].name()),
            (8, Some("Buy item 3"), "Buy")
        );
    }

    #[test]
    fn keeps_text_lines_in_order() {
        let lines = lines("## Primary\nGenre\n[1]<input>\n  Year \n*[2]<button>Go!</button>");
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert_eq!(lines[0], Line::Text("Primary".into()));
        assert_eq!(lines[1], Line::Text("Genre".into()));
        assert!(matches!(&lines[2], Line::Element(e) if e.index == 1));
        assert_eq!(lines[3], Line::Text("Year".into()));
        assert!(matches!(&lines[4], Line::Element(e) if e.text == "Go!"));
    }
}
