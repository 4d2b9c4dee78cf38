//! Which actions wait for the user's approval. The host decides, never the
//! model: an action whose element reads like something that cannot be
//! taken back (pay, place an order, send, delete, change a password…), or
//! any action that changes something on a site the user marked "ask
//! first". It errs on the side of asking.

use errand_protocol::{Action, ElementInfo, Observation};

use crate::agent::prompt::{describe_action, element_label};
use crate::sites::SitePolicy;
use crate::text::cut;

/// An action the user must approve first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// What will happen, in plain words.
    pub summary: String,
    /// Why it needs approval.
    pub reason: String,
    /// The element as the page lists it, empty when there is none.
    pub element: String,
}

/// Words (whole words, any case) that make a control's action one that
/// cannot be taken back.
const IRREVERSIBLE: &[&str] = &[
    "pay",
    "purchase",
    "buy",
    "checkout",
    "donate",
    "transfer",
    "withdraw",
    "send",
    "post",
    "publish",
    "tweet",
    "delete",
    "remove",
    "erase",
    "destroy",
    "unsubscribe",
    "deactivate",
    "terminate",
    "reserve",
    "bid",
    "wire",
];

/// Phrases for actions that cannot be taken back but use common words
/// (`order`, `book`, `cancel`, `confirm` alone are too common to ask for).
const IRREVERSIBLE_PHRASES: &[&str] = &[
    "place order",
    "place your order",
    "order now",
    "confirm order",
    "submit order",
    "complete order",
    "book now",
    "confirm booking",
    "complete booking",
    "confirm purchase",
    "complete purchase",
    "submit payment",
    "confirm payment",
    "subscribe now",
    "start subscription",
    "cancel subscription",
    "cancel my subscription",
    "cancel order",
    "cancel booking",
    "cancel reservation",
    "cancel membership",
    "cancel plan",
    "cancel account",
    "close account",
    "close my account",
    "change password",
    "update password",
    "reset password",
    "set password",
    "save password",
    "change email",
    "sign and submit",
];

/// The reason `label` (an element's name) reads as irreversible, if it does.
pub fn irreversible_words(label: &str) -> Option<String> {
    let lower = label.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let joined = format!(" {} ", words.join(" "));
    if let Some(p) = IRREVERSIBLE_PHRASES.iter().find(|p| joined.contains(&format!(" {p} "))) {
        return Some(format!("\u{201c}{p}\u{201d} cannot be taken back"));
    }
    words
        .iter()
        .find(|w| IRREVERSIBLE.contains(w))
        .map(|w| format!("\u{201c}{w}\u{201d} may not be undoable"))
}

/// Whether `action` changes the page (as opposed to reading or moving).
fn changes_something(action: &Action) -> bool {
    !matches!(
        action,
        Action::Hover { .. }
            | Action::Focus { .. }
            | Action::Scroll { .. }
            | Action::Extract { .. }
            | Action::GoBack {}
            | Action::GoForward {}
            | Action::SwitchTab { .. }
            | Action::Wait { .. }
            | Action::SendMessage { .. }
            | Action::AskUser { .. }
            | Action::Done { .. }
            | Action::ReportInfeasible { .. }
    )
}

/// Whether `action` presses something: a click, or Enter / Space.
pub fn presses(action: &Action) -> bool {
    match action {
        Action::Click { .. } | Action::DblClick { .. } => true,
        Action::Press { key, .. } => {
            let last = key.rsplit('+').next().unwrap_or(key).trim().to_ascii_lowercase();
            matches!(last.as_str(), "enter" | "return" | "space" | " ")
        }
        _ => false,
    }
}

/// Why `action` may not run because it would navigate (a link, a form's
/// submission) to a page the site lists refuse, if it would. Used by the
/// agent and by the MCP tools alike.
pub fn leads_off_limits(action: &Action, obs: &Observation, policy: &SitePolicy) -> Option<String> {
    let index = action.element().filter(|_| presses(action))?;
    let target = element(obs, index)?.target.as_deref()?;
    let refused = policy.check(target).err()?;
    Some(format!("not done: it would open {}: {refused}", cut(target, 120)))
}

fn element(obs: &Observation, index: u32) -> Option<&ElementInfo> {
    obs.elements.iter().find(|e| e.index == index)
}

/// Whether `action`, about to run on the page `obs` shows, needs the user's
/// approval first, and why.
pub fn check(action: &Action, obs: &Observation, policy: &SitePolicy) -> Option<Approval> {
    let target = action.element().and_then(|i| element(obs, i));
    let label = target.map(element_label).unwrap_or_default();
    let summary = summary(action, target, &obs.url);
    let approval =
        |reason: String| Approval { summary: summary.clone(), reason, element: label.clone() };

    // Where the action lands: the page, or the address it opens.
    let destination = match action {
        Action::Goto { url } | Action::NewTab { url: Some(url) } => Some(url.as_str()),
        _ => None,
    };
    if let Some(url) = destination {
        if let Some(entry) = policy.ask_first(url) {
            return Some(approval(format!("you asked to approve everything on {entry}")));
        }
    } else if changes_something(action) {
        if let Some(entry) = policy.ask_first(&obs.url) {
            return Some(approval(format!("you asked to approve everything on {entry}")));
        }
    }

    if !presses(action) {
        return None;
    }
    match target {
        Some(el) => irreversible_words(&el.name)
            .or_else(|| el.value.as_deref().and_then(irreversible_words))
            .map(|why| approval(format!("{why}; Errand asks before such actions"))),
        // Enter on the focused element: it may submit any form on the
        // page. Ask when the page offers an irreversible button.
        None => obs
            .elements
            .iter()
            .filter(|e| !e.disabled && matches!(e.tag.as_str(), "button" | "input"))
            .find_map(|e| irreversible_words(&e.name))
            .map(|why| {
                approval(format!(
                    "pressing it may submit the page's form, which offers {why}; Errand asks first"
                ))
            }),
    }
}

/// One sentence: what will happen.
fn summary(action: &Action, target: Option<&ElementInfo>, page_url: &str) -> String {
    let site = crate::memory::store::site_of(page_url);
    let name = target
        .map(|e| cut(&e.name.split_whitespace().collect::<Vec<_>>().join(" "), 60))
        .filter(|n| !n.is_empty())
        .map(|n| format!("\u{201c}{n}\u{201d}"))
        .unwrap_or_else(|| "the focused field".to_owned());
    let what = match action {
        Action::Click { .. } => format!("Click {name}"),
        Action::DblClick { .. } => format!("Double-click {name}"),
        Action::Press { key, .. } => format!("Press {key} in {name}"),
        Action::Fill { text, .. } | Action::Type { text, .. } => {
            format!("Type \u{201c}{}\u{201d} into {name}", cut(text, 60))
        }
        Action::Goto { url } => format!("Open {}", cut(url, 120)),
        Action::NewTab { url: Some(url) } => format!("Open {} in a new tab", cut(url, 120)),
        other => describe_action(other, &target.map(element_label).unwrap_or_default()),
    };
    let on = match action {
        Action::Goto { .. } | Action::NewTab { .. } => String::new(),
        _ if site.is_empty() => String::new(),
        _ => format!(" on {site}"),
    };
    cut(&format!("{what}{on}"), 200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SitesSection;
    use errand_protocol::ClickButton;

    fn page(buttons: &[(u32, &str)]) -> Observation {
        Observation {
            url: "https://shop.example/cart".into(),
            elements: buttons
                .iter()
                .map(|(i, name)| ElementInfo {
                    index: *i,
                    tag: "button".into(),
                    name: (*name).into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn click(index: u32) -> Action {
        Action::Click {
            index,
            button: ClickButton::Left,
            modifiers: vec![],
            dialog: Default::default(),
        }
    }

    #[test]
    fn irreversible_controls_need_approval() {
        let obs = page(&[
            (1, "Place order"),
            (2, "Pay now"),
            (3, "Delete account"),
            (4, "Next"),
            (5, "Cancel"),
            (6, "Cancel subscription"),
            (7, "Add to basket"),
            (8, "Order history"),
            (9, "Sign in"),
            (10, "Send message"),
        ]);
        let p = SitePolicy::default();
        for i in [1, 2, 3, 6, 10] {
            let a = check(&click(i), &obs, &p).unwrap_or_else(|| panic!("element {i}"));
            assert!(
                a.summary.starts_with("Click \u{201c}") && a.summary.ends_with(" on shop.example"),
                "{a:?}"
            );
            assert!(!a.element.is_empty());
        }
        for i in [4, 5, 7, 8, 9] {
            assert_eq!(check(&click(i), &obs, &p), None, "element {i}");
        }
        // Filling the field next to it is not irreversible.
        assert_eq!(check(&Action::Fill { index: 1, text: "x".into() }, &obs, &p), None);
        // Enter on a field of a page that offers "Place order" may submit it.
        let enter = Action::Press { key: "Enter".into(), index: None, dialog: Default::default() };
        assert!(check(&enter, &obs, &p).unwrap().reason.contains("submit"));
        assert_eq!(check(&enter, &page(&[(1, "Search")]), &p), None);
    }

    #[test]
    fn ask_first_sites_need_approval_for_changes() {
        let p = SitePolicy::new(&SitesSection {
            ask_first: vec!["shop.example".into()],
            ..Default::default()
        });
        let obs = page(&[(4, "Next")]);
        let a = check(&Action::Fill { index: 4, text: "x".into() }, &obs, &p).unwrap();
        assert!(a.reason.contains("shop.example"), "{a:?}");
        assert_eq!(
            check(
                &Action::Scroll {
                    direction: errand_protocol::ScrollDirection::Down,
                    index: None,
                    pages: None
                },
                &obs,
                &p
            ),
            None
        );
        let goto = Action::Goto { url: "https://www.shop.example/".into() };
        assert!(check(&goto, &page(&[]), &p).is_some());
        let elsewhere = Observation { url: "https://news.example/".into(), ..page(&[(4, "Next")]) };
        assert_eq!(check(&click(4), &elsewhere, &p), None);
    }
}
