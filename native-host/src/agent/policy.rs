//! What waits for the user: an action is judged by what it would set off
//! ([`Stakes`], told by the page before the action), never by one name.
//!
//! The kinds that wait (pay, buy, order, check out, subscribe; send, post,
//! publish; delete, remove, trash, drop, empty, purge, erase, clear
//! history; cancel a subscription, an account or an order; move money;
//! change a password or security settings) and the words that name them,
//! in fifteen languages, are data: `native-host/data/stakes.toml` (built
//! in; `<config dir>/stakes.toml` adds words). A text matches after
//! Unicode compatibility normalisation (NFKC: fullwidth letters are
//! letters), case folding and the removal of invisible characters (a word
//! joiner inside "De\u{2060}lete" hides nothing).
//!
//! What is read, for an action that activates something:
//! 1. the control's own words: its visible text *and* its accessible name,
//!    title, value, alt texts — an `aria-label` saying "Continue" does not
//!    hide the "Pay $500 now" a person reads — or, for a control that shows
//!    no text, its icons' words (an icon-only trash button);
//! 2. the form it submits, when it does (a submit control, Enter in a
//!    field, `type` with Enter): the words of the form's submit controls
//!    and the options chosen in it (the bulk action an "Apply" applies);
//! 3. the dialog it sits in, unless the control only dismisses it ("Cancel"
//!    under "Delete your account?" is no deletion); outside a dialog, the
//!    heading above it when the control's words only confirm ("Yes", "OK",
//!    "Continue").
//! A JavaScript `confirm()` or `prompt()` the action opened is judged by
//! its message ([`judge_dialog`]): an answer decided in advance never
//! skips the approval its text calls for.
//!
//! Without the page's stakes (an element in a cross-origin frame, a page
//! that did not answer), the element list's name and value are read, and
//! Enter with no element asks when the page offers any control that reads
//! as irreversible: when in doubt, ask.

use std::sync::OnceLock;

use errand_protocol::{Action, ElementInfo, Observation, Stakes};
use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;

/// The built-in lexicon.
pub const BUILT_IN: &str = include_str!("../../data/stakes.toml");

/// Why an action waits for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// The kind's name (`pay`, `delete`, …): approvals for a task or a site
    /// are given per kind.
    pub kind: String,
    /// The sentence the user reads.
    pub reason: String,
}

/// The lexicon: the kinds and their entries, and the words of controls
/// that only dismiss or only confirm.
#[derive(Debug, Default)]
pub struct Lexicon {
    kinds: Vec<Kind>,
    dismiss: Vec<Entry>,
    confirm: Vec<Entry>,
}

#[derive(Debug)]
struct Kind {
    name: String,
    what: String,
    entries: Vec<Entry>,
}

/// One entry, folded.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// As written (for the reason the user reads).
    text: String,
    /// Its words; the last one a prefix when written with `*`.
    words: Vec<String>,
    prefix: bool,
    /// Written without spaces (CJK): matched anywhere in the folded text.
    anywhere: Option<String>,
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    kinds: std::collections::BTreeMap<String, KindFile>,
    #[serde(default)]
    dismiss: std::collections::BTreeMap<String, Vec<String>>,
    #[serde(default)]
    confirm: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
struct KindFile {
    what: Option<String>,
    #[serde(flatten)]
    languages: std::collections::BTreeMap<String, Vec<String>>,
}

impl Lexicon {
    /// The built-in lexicon, with the user's additions
    /// (`<config dir>/stakes.toml`) when there are any and they read.
    pub fn get() -> &'static Lexicon {
        static LEXICON: OnceLock<Lexicon> = OnceLock::new();
        LEXICON.get_or_init(|| {
            let mut lexicon = Lexicon::parse(BUILT_IN).expect("the built-in stakes.toml reads");
            let user = directories::ProjectDirs::from("", "", "errand")
                .map(|d| d.config_dir().join("stakes.toml"));
            if let Some(text) = user.and_then(|p| std::fs::read_to_string(p).ok()) {
                match Lexicon::parse(&text) {
                    Ok(more) => lexicon.add(more),
                    Err(e) => tracing::warn!("stakes.toml in the config folder is ignored: {e}"),
                }
            }
            lexicon
        })
    }

    /// Reads a lexicon in `stakes.toml`'s format.
    pub fn parse(text: &str) -> Result<Lexicon, String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let entries = |langs: &std::collections::BTreeMap<String, Vec<String>>| {
            langs.values().flatten().filter_map(|t| Entry::new(t)).collect::<Vec<_>>()
        };
        Ok(Lexicon {
            kinds: file
                .kinds
                .into_iter()
                .map(|(name, k)| Kind {
                    what: k.what.unwrap_or_else(|| name.clone()),
                    entries: entries(&k.languages),
                    name,
                })
                .collect(),
            dismiss: entries(&file.dismiss),
            confirm: entries(&file.confirm),
        })
    }

    fn add(&mut self, more: Lexicon) {
        for k in more.kinds {
            match self.kinds.iter_mut().find(|mine| mine.name == k.name) {
                Some(mine) => mine.entries.extend(k.entries),
                None => self.kinds.push(k),
            }
        }
        self.dismiss.extend(more.dismiss);
        self.confirm.extend(more.confirm);
    }

    /// The kind `text` names, with the entry that matched.
    pub fn kind_of(&self, text: &str) -> Option<(&str, &str, &str)> {
        let folded = fold(text);
        let words = words(&folded);
        self.kinds.iter().find_map(|k| {
            k.entries
                .iter()
                .find(|e| e.matches(&folded, &words))
                .map(|e| (k.name.as_str(), k.what.as_str(), e.text.as_str()))
        })
    }

    /// Whether `text` is, as a whole, one of `entries` (a control that only
    /// dismisses, or only confirms).
    fn is_whole(entries: &[Entry], text: &str) -> bool {
        let folded = fold(text);
        let w = words(&folded);
        !w.is_empty()
            && entries.iter().any(|e| match &e.anywhere {
                Some(a) => folded.trim() == a,
                None => e.words == w,
            })
    }

    /// Whether a control with these words only dismisses (Cancel, No, Close).
    pub fn dismisses(&self, texts: &[String]) -> bool {
        !texts.is_empty() && texts.iter().all(|t| Self::is_whole(&self.dismiss, t))
    }

    /// Whether a control with these words only confirms (Yes, OK, Continue).
    pub fn only_confirms(&self, texts: &[String]) -> bool {
        !texts.is_empty() && texts.iter().all(|t| Self::is_whole(&self.confirm, t))
    }
}

impl Entry {
    fn new(text: &str) -> Option<Entry> {
        let folded = fold(text);
        let prefix = folded.trim_end().ends_with('*');
        let folded = folded.trim().trim_end_matches('*').to_owned();
        let ws = words(&folded);
        if ws.is_empty() {
            return None;
        }
        let anywhere =
            (!folded.contains(' ') && folded.chars().any(unspaced)).then(|| folded.clone());
        Some(Entry { text: text.trim_end_matches('*').to_owned(), words: ws, prefix, anywhere })
    }

    fn matches(&self, folded: &str, words: &[String]) -> bool {
        if let Some(a) = &self.anywhere {
            return folded.contains(a.as_str());
        }
        let n = self.words.len();
        words.windows(n).any(|w| {
            w.iter().zip(&self.words).enumerate().all(|(i, (have, want))| {
                if self.prefix && i == n - 1 {
                    have.starts_with(want.as_str())
                } else {
                    have == want
                }
            })
        })
    }
}

/// Characters of scripts written without spaces between words (Han, kana,
/// hangul, Thai): an entry in them matches anywhere.
fn unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0E7F | 0x1100..=0x11FF | 0x3040..=0x30FF | 0x3130..=0x318F
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// `text` as it is compared: NFKC, without invisible characters (default
/// ignorables: zero-width spaces and joiners, the word joiner, soft
/// hyphens, bidirectional controls, variation selectors), lower case,
/// typographic apostrophes as `'`.
pub fn fold(text: &str) -> String {
    text.nfkc()
        .filter(|c| !super::fence::ignorable(*c))
        .flat_map(char::to_lowercase)
        .map(|c| if matches!(c, '\u{2019}' | '\u{2018}' | '\u{02bc}') { '\'' } else { c })
        .collect()
}

/// The words of a folded text (letters and digits; `'` splits, as it does
/// in the entries).
fn words(folded: &str) -> Vec<String> {
    folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The options a choice names by their text (`select_option`, `fill` of a
/// select).
fn chosen(action: &Action) -> Vec<&str> {
    match action {
        Action::SelectOption { options, .. } => options
            .iter()
            .filter_map(|o| match o {
                errand_protocol::OptionChoice::Text(t) => Some(t.as_str()),
                errand_protocol::OptionChoice::Position(_) => None,
            })
            .collect(),
        Action::Fill { text, .. } => vec![text.as_str()],
        _ => Vec::new(),
    }
}

/// Whether `action` presses or activates something where it lands.
pub fn activates(action: &Action, element: Option<&ElementInfo>) -> bool {
    match action {
        // `fill` of a select chooses an option, as `select_option` does.
        Action::Fill { .. } => element.is_some_and(|e| e.tag.eq_ignore_ascii_case("select")),
        Action::Click { .. }
        | Action::DblClick { .. }
        | Action::Hold { .. }
        | Action::DragAndDrop { .. }
        | Action::DragPath { .. } => true,
        Action::Type { .. } => action.types_past_text(),
        Action::Press { .. } => {
            let (enter, space) = action.presses_enter_or_space();
            enter || space
        }
        // Whether these commit is the page's to tell (a switch drawn as a
        // button, a select of a form): asked, and judged by the stakes.
        Action::Check { .. } | Action::Uncheck { .. } | Action::SelectOption { .. } => true,
        _ => false,
    }
}

/// Whether `action` waits for the user, judged by its `stakes` (or, without
/// them, by its element as the list shows it).
pub fn judge(
    action: &Action,
    element: Option<&ElementInfo>,
    stakes: Option<&Stakes>,
    obs: &Observation,
) -> Option<Judgement> {
    let lexicon = Lexicon::get();
    let hit = |text: &str, whose: &str| {
        lexicon.kind_of(text).map(|(kind, what, entry)| Judgement {
            kind: kind.to_owned(),
            reason: format!(
                "{whose} \u{201c}{}\u{201d}: \u{201c}{entry}\u{201d} reads as {what}, which may not be undoable",
                crate::text::cut(&text.split_whitespace().collect::<Vec<_>>().join(" "), 80)
            ),
        })
    };
    match stakes {
        Some(s) => {
            if !s.activates {
                return None;
            }
            let control = s.control();
            let listed = element.map(|e| e.name.as_str()).filter(|n| !n.is_empty());
            for text in control.iter().map(String::as_str).chain(listed) {
                if let Some(j) = hit(text, "it reads") {
                    return Some(j);
                }
            }
            // The option a committing choice picks (a select the page acts on
            // at once: "Delete" in an auto-applied bulk menu).
            for text in chosen(action) {
                if let Some(j) = hit(text, "it chooses") {
                    return Some(j);
                }
            }
            if let Some(form) = &s.form {
                for text in &form.submits {
                    if let Some(j) = hit(text, "it submits the form of") {
                        return Some(j);
                    }
                }
                for text in &form.choices {
                    if let Some(j) = hit(text, "it applies the choice") {
                        return Some(j);
                    }
                }
            }
            let in_dialog = s.in_dialog && !lexicon.dismisses(control);
            let confirms = !s.in_dialog && lexicon.only_confirms(control);
            if in_dialog || confirms {
                for text in &s.context {
                    if let Some(j) = hit(text, "it answers") {
                        return Some(j);
                    }
                }
            }
            None
        }
        None => {
            if !activates(action, element) {
                return None;
            }
            match element {
                Some(el) => hit(&el.name, "it reads")
                    .or_else(|| el.value.as_deref().and_then(|v| hit(v, "it reads"))),
                // Enter on the focused element may submit any form of the
                // page: asked when the page offers such a control.
                None => obs
                    .elements
                    .iter()
                    .filter(|e| !e.disabled && matches!(e.tag.as_str(), "button" | "input"))
                    .find_map(|e| {
                        hit(&e.name, "pressing it may submit the page's form, which offers")
                    }),
            }
        }
    }
}

/// Whether a JavaScript dialog's message calls for the user's approval
/// before it is accepted.
pub fn judge_dialog(message: &str) -> Option<Judgement> {
    Lexicon::get().kind_of(message).map(|(kind, what, entry)| Judgement {
        kind: kind.to_owned(),
        reason: format!(
            "the page asks \u{201c}{}\u{201d}: \u{201c}{entry}\u{201d} reads as {what}, which may not be undoable",
            crate::text::cut(&message.split_whitespace().collect::<Vec<_>>().join(" "), 120)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use errand_protocol::FormStakes;

    fn kind(text: &str) -> Option<String> {
        Lexicon::get().kind_of(text).map(|(k, _, _)| k.to_owned())
    }

    #[test]
    fn the_built_in_lexicon_reads_and_names_every_kind() {
        let l = Lexicon::parse(BUILT_IN).unwrap();
        let names: Vec<&str> = l.kinds.iter().map(|k| k.name.as_str()).collect();
        for k in ["pay", "publish", "delete", "cancel", "transfer", "security"] {
            assert!(names.contains(&k), "{names:?}");
        }
        assert!(!l.dismiss.is_empty() && !l.confirm.is_empty());
    }

    #[test]
    fn words_match_whole_in_any_case_width_and_with_invisible_characters() {
        assert_eq!(kind("Pay $500 now").as_deref(), Some("pay"));
        assert_eq!(kind("PAY"), Some("pay".into()));
        assert_eq!(kind("Ｐａｙ　ｎｏｗ"), Some("pay".into()), "fullwidth");
        assert_eq!(kind("De\u{2060}lete"), Some("delete".into()), "word joiner");
        assert_eq!(kind("Del\u{00AD}ete"), Some("delete".into()), "soft hyphen");
        assert_eq!(kind("Deleted items"), Some("delete".into()), "prefix entry");
        assert_eq!(kind("Check out"), Some("pay".into()));
        assert_eq!(kind("Move to Trash"), Some("delete".into()));
        assert_eq!(kind("DROP TABLE `users`"), Some("delete".into()));
        assert_eq!(kind("Clear history"), Some("delete".into()));
        for benign in ["Paypal help", "Next", "Order history", "Add to basket", "Sign in", "Search"]
        {
            assert_eq!(kind(benign), None, "{benign}");
        }
    }

    #[test]
    fn words_of_other_languages_are_known() {
        for (text, want) in [
            ("Jetzt kaufen", "pay"),
            ("Zahlungspflichtig bestellen", "pay"),
            ("Comprar ahora", "pay"),
            ("Passer la commande", "pay"),
            ("Finalizar compra", "pay"),
            ("Acquista ora", "pay"),
            ("Оформить заказ", "pay"),
            ("今すぐ購入", "pay"),
            ("立即购买", "pay"),
            ("결제", "pay"),
            ("Löschen", "delete"),
            ("Supprimer le compte", "delete"),
            ("削除する", "delete"),
            ("Usuń", "delete"),
            ("Verwijderen", "delete"),
            ("Sil", "delete"),
            ("حذف", "delete"),
            ("Enviar", "publish"),
            ("Kündigen", "cancel"),
            ("Überweisen", "transfer"),
            ("Passwort ändern", "security"),
        ] {
            assert_eq!(kind(text).as_deref(), Some(want), "{text}");
        }
    }

    fn click() -> Action {
        Action::Click {
            index: 1,
            button: Default::default(),
            modifiers: vec![],
            dialog: Default::default(),
        }
    }

    fn stakes(words: &[&str]) -> Stakes {
        Stakes {
            activates: true,
            words: words.iter().map(|w| (*w).to_owned()).collect(),
            ..Stakes::default()
        }
    }

    fn activates_(action: &Action) -> bool {
        activates(action, None)
    }

    #[test]
    fn filling_a_select_chooses_like_select_option() {
        let fill = Action::Fill { index: 4, text: "Delete permanently".into() };
        let select = ElementInfo { index: 4, tag: "select".into(), ..Default::default() };
        let field = ElementInfo { index: 4, tag: "input".into(), ..Default::default() };
        assert!(activates(&fill, Some(&select)), "a fill of a select chooses an option");
        assert!(!activates(&fill, Some(&field)), "a fill of a field only writes");
        assert!(!activates(&fill, None));
        assert_eq!(chosen(&fill), vec!["Delete permanently"]);
    }

    #[test]
    fn typing_a_line_break_or_a_tab_may_activate_like_enter() {
        let ty = |text: &str, enter: bool| Action::Type {
            index: 1,
            text: text.into(),
            enter,
            clear: false,
        };
        assert!(!activates_(&ty("500", false)));
        assert!(activates_(&ty("500", true)));
        assert!(activates_(&ty("500\n", false)), "a line break is typed as Enter");
        assert!(activates_(&ty("500\r", false)));
        assert!(activates_(&ty("500\t ", false)), "a tab moves on: the space presses what is next");
        let press = |key: &str| Action::Press {
            key: key.into(),
            index: Some(1),
            dialog: Default::default(),
        };
        for key in ["Enter", "return", "Control+Enter", " ", "Shift+ ", "space", "Alt+Space"] {
            assert!(activates_(&press(key)), "{key:?}");
        }
        for key in ["a", "Tab", "Shift+Tab", "+", "Escape"] {
            assert!(!activates_(&press(key)), "{key:?}");
        }
    }

    #[test]
    fn every_text_of_the_control_is_read() {
        let obs = Observation::default();
        // The accessible name says Continue; the text says what it does.
        let s = stakes(&["Pay $500 now", "Continue"]);
        assert_eq!(judge(&click(), None, Some(&s), &obs).unwrap().kind, "pay");
        // An icon-only button: its icon.
        let icon = Stakes { icons: vec!["fa trash can".into()], ..stakes(&[]) };
        assert_eq!(judge(&click(), None, Some(&icon), &obs).unwrap().kind, "delete");
        // A control with text: its icons do not count (a "send" icon on Submit).
        let text = Stakes { icons: vec!["send".into()], ..stakes(&["Submit"]) };
        assert_eq!(judge(&click(), None, Some(&text), &obs), None);
        // Nothing activates: not judged.
        let fill = Stakes { activates: false, ..stakes(&["Delete"]) };
        assert_eq!(
            judge(&Action::Fill { index: 1, text: "x".into() }, None, Some(&fill), &obs),
            None
        );
    }

    #[test]
    fn the_form_it_submits_and_the_choice_it_applies_are_read() {
        let obs = Observation::default();
        let enter =
            Action::Press { key: "Enter".into(), index: Some(1), dialog: Default::default() };
        let field = Stakes {
            form: Some(FormStakes { submits: vec!["Pay $500".into()], ..FormStakes::default() }),
            ..stakes(&["Amount"])
        };
        assert_eq!(judge(&enter, None, Some(&field), &obs).unwrap().kind, "pay");
        let apply = Stakes {
            form: Some(FormStakes {
                submits: vec!["Apply".into()],
                choices: vec!["Move to Trash".into()],
                ..FormStakes::default()
            }),
            ..stakes(&["Apply"])
        };
        assert_eq!(judge(&click(), None, Some(&apply), &obs).unwrap().kind, "delete");
    }

    #[test]
    fn a_dialog_is_read_unless_the_control_dismisses_it() {
        let obs = Observation::default();
        let context = vec!["Delete your account and all its data?".to_owned()];
        let yes = Stakes { context: context.clone(), in_dialog: true, ..stakes(&["Yes"]) };
        assert_eq!(judge(&click(), None, Some(&yes), &obs).unwrap().kind, "delete");
        let cancel = Stakes { context: context.clone(), in_dialog: true, ..stakes(&["Cancel"]) };
        assert_eq!(judge(&click(), None, Some(&cancel), &obs), None);
        // Under a heading: only a control that only confirms reads it.
        let ok = Stakes { context: context.clone(), ..stakes(&["OK"]) };
        assert!(judge(&click(), None, Some(&ok), &obs).is_some());
        let next = Stakes { context, ..stakes(&["Show my data"]) };
        assert_eq!(judge(&click(), None, Some(&next), &obs), None);
        assert_eq!(judge_dialog("Really DROP TABLE users?").unwrap().kind, "delete");
        assert_eq!(judge_dialog("Leave this page?"), None);
    }
}
