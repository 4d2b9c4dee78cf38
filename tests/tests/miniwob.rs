//! A short MiniWoB++ subset through the whole pipeline (one seed each): the
//! task's own instruction typed into the real side panel, the real host,
//! prompts, parser, content script and actions, and MiniWoB's own reward.
//! The full run (every task, five seeds) is the benchmark:
//! `cargo run --release -p errand-e2e --example miniwob`.

use errand_e2e::miniwob::{Miniwob, ModelChoice, report};

const SUBSET: &[&str] = &[
    "click-button",
    "click-link",
    "click-checkboxes",
    "enter-text",
    "login-user",
    "choose-list",
    "enter-date",
    // Several steps: suggestions after typing, a tree to open, an inbox
    // whose Send waits for the user's approval (the harness approves).
    "use-autocomplete",
    "navigate-tree",
    "email-inbox-forward",
    // Issue 18, one per reason: cells acting only through listeners, an
    // icon inside a clickable row (its deletion approved), a spinner's
    // arrows, keys pressed with nothing named (a terminal), copy and
    // paste, posts whose author repeats.
    "tic-tac-toe",
    "email-inbox-delete",
    "use-spinner",
    "terminal",
    "copy-paste",
    "social-media-all",
];

#[test]
fn miniwob_subset_earns_a_reward_on_every_episode() {
    let rig = Miniwob::start(ModelChoice::Scripted).unwrap_or_else(|e| panic!("{e:#}"));
    let mut episodes = Vec::new();
    for task in SUBSET {
        let episode = rig.episode(task, 1).unwrap_or_else(|e| panic!("{task}: {e:#}"));
        episodes.push(episode);
    }
    let approvals: u32 = episodes.iter().map(|e| e.approvals).sum();
    let table = report(&episodes);
    eprintln!("{table}");
    let failed: Vec<String> = episodes
        .iter()
        .filter(|e| !e.success())
        .map(|e| {
            format!(
                "{} (reward {}, {}: {}, Errand said {:?})",
                e.task, e.reward, e.status, e.reason, e.answer
            )
        })
        .collect();
    assert!(failed.is_empty(), "episodes without reward: {failed:#?}\n{table}");
    // Forwarding the email asks approval for its Send, deleting one for
    // the trash icon: once each.
    assert_eq!(approvals, 2, "approvals given: {approvals}\n{table}");
}
