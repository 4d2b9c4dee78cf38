//! The gate: the one way from any caller to the browser.
//!
//! Every action of every caller — the agent loop (`actions.rs`), each MCP
//! tool call (`crate::tools`), each recipe step and its repair (`replay.rs`,
//! which runs through the agent's own actions) — passes [`Gate::pass`]. It
//! decides *allow / ask / refuse*, says why (a [`Verdict`] recorded with
//! the step), asks the person through the caller's [`Asker`] when it must,
//! and only then carries the action out. The browser port's methods that
//! change anything (`act`, `set_files`, `navigate`, `open_tab`) take a
//! [`Permit`], which only this module can make: no code reaches the browser
//! around the gate (the compiler holds it), and `tests` hold that every
//! action kind gets a verdict.
//!
//! The life of one action, from the model's answer (or the MCP call, or the
//! recipe's step) to the page and back:
//! 1. its element numbers are looked up in the observation they come from;
//!    a number that is not listed is refused;
//! 2. where it leads is checked against the site lists: the address a
//!    `goto` or `new_tab` opens, and for an action on an element the origin
//!    of the frame the element is in and the address a link or form would
//!    open (a denied site in a frame of an allowed page is refused too);
//! 3. an action that may activate something asks the page for its stakes
//!    (`PageCommand::Stakes`, one round trip): the control's words, the form
//!    it submits and what is chosen in it, the dialog or heading around it,
//!    where it leads — checked against the site lists again;
//! 4. the policy ([`super::policy`]) judges them; any change on an
//!    ask-first site asks;
//! 5. an approval the user gave for this task, or always on this site, for
//!    the kind answers; else the person is asked ([`Asker::ask`]);
//! 6. an answer for JavaScript dialogs decided in advance is kept only for
//!    an approved action (the model's `dialog: accept` is set aside); the
//!    secrets are put in, only on their origins and into secret fields;
//! 7. it runs (`tabs::act`); a `confirm()` or `prompt()` the page opened
//!    and Errand declined is judged by its message: when that calls for
//!    approval the person is asked, and on a yes — or when the model wanted
//!    it accepted and the message is harmless — the action runs once more
//!    with the dialog accepted;
//! 8. an action that took the tab to a page the site lists refuse is
//!    followed by going back, and reported as refused.

use std::future::Future;
use std::path::Path;
use std::sync::Mutex;

use errand_protocol::{
    Action, DialogChoice, Effect, ElementInfo, Observation, PolicyDecision, Stakes, Verdict,
};

use super::approval::{self, Approval};
use super::policy;
use super::ports::{Browser, BrowserError, Decision, Guard, TabInfo};
use super::tabs::{self, TabOutcome};
use crate::memory::secrets::{self, Filled, Secrets};
use crate::memory::store::{Store, site_of};
use crate::sites::SitePolicy;
use crate::text::cut;

/// Leave to reach the browser: made only here, by the gate, for an action
/// it let through.
#[derive(Clone, PartialEq, Eq)]
pub struct Permit(());

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Permit")
    }
}

impl Guard {
    /// A guard for an action carrying no secrets.
    fn plain(permit: Permit) -> Guard {
        Guard { only_on: None, secret_field: false, secrets: Vec::new(), permit }
    }
}

/// How the gate reaches the person the task works for: the agent through
/// its operator and the side panel or terminal, an MCP session through its
/// own. Each caller builds and records its own `approval` event.
pub trait Asker: Send + Sync {
    /// Asks the person to approve `what`; a stop answers for them.
    fn ask(&self, what: &Approval, action: &Action) -> impl Future<Output = Decision> + Send;
}

/// Approvals the person gave beyond one action: for the rest of the task
/// (in memory) and always on a site (in the store), per kind.
#[derive(Default)]
pub struct Grants {
    task: Mutex<Vec<(String, String)>>,
    store: Option<Store>,
}

impl Grants {
    /// Grants for one task, reading and keeping the lasting ones in `store`.
    pub fn new(store: Option<Store>) -> Grants {
        Grants { task: Mutex::default(), store }
    }

    /// What covers `kind` on `site`, if anything: "for this task" or "always
    /// on <site>".
    fn covering(&self, kind: &str, site: &str) -> Option<String> {
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner());
        if task.iter().any(|(k, s)| k == kind && s == site) {
            return Some(format!("approved for {kind} on {site} for this task"));
        }
        drop(task);
        let store = self.store.as_ref()?;
        store.has_grant(site, kind).ok().filter(|g| *g)?;
        Some(format!("approved always for {kind} on {site}"))
    }

    fn remember(&self, decision: Decision, kind: &str, site: &str) {
        match decision {
            Decision::ApprovedForTask => {
                let mut task = self.task.lock().unwrap_or_else(|p| p.into_inner());
                task.push((kind.to_owned(), site.to_owned()));
            }
            Decision::ApprovedOnSite => {
                if let Some(store) = &self.store {
                    if let Err(e) = store.add_grant(site, kind) {
                        tracing::error!("cannot keep the approval for {kind} on {site}: {e}");
                    }
                }
            }
            _ => {}
        }
    }
}

/// What the gate works with, from its caller.
pub struct Gate<'a, B, A> {
    pub browser: &'a B,
    pub asker: &'a A,
    pub sites: &'a SitePolicy,
    pub secrets: &'a Secrets,
    pub grants: &'a Grants,
    /// Where `upload_file` takes files from.
    pub uploads: &'a Path,
}

/// What became of one action at the gate.
#[derive(Debug)]
pub struct Passage {
    pub verdict: Verdict,
    pub ran: Ran,
    /// The secrets it put in (the caller scrubs their values from now on).
    pub used: Vec<Filled>,
}

/// What was carried out.
#[derive(Debug)]
pub enum Ran {
    /// Nothing: refused, rejected, or nobody to ask (the verdict says why).
    Not(String),
    /// Allowed, and the caller's own to carry out: it touches no browser
    /// (`done`, `ask_user`, `wait`, …).
    Host,
    /// A page action, and what the page said.
    Page(Result<Effect, BrowserError>),
    /// A `goto`: the tab, loaded (or a new one when the caller had none).
    Opened(Result<TabInfo, BrowserError>),
    /// A tab action.
    Tab(TabOutcome),
}

impl Passage {
    fn refused(decision: PolicyDecision, why: String) -> Passage {
        Passage {
            verdict: Verdict::new(decision, why.clone()),
            ran: Ran::Not(why),
            used: Vec::new(),
        }
    }
}

/// The reason told when the user rejected an action, or nobody could be asked.
fn not_approved(decision: Decision) -> String {
    match decision {
        Decision::Unasked => super::prompt::NOBODY_TO_ASK.to_owned(),
        _ => super::prompt::REJECTED_BY_USER.to_owned(),
    }
}

impl<B: Browser, A: Asker> Gate<'_, B, A> {
    /// Judges `action`, planned on `obs` in tab `tab` (`None`: the caller
    /// has no tab yet), and carries it out when allowed.
    pub async fn pass(&self, tab: Option<i64>, obs: &Observation, action: &Action) -> Passage {
        // 1. The element numbers.
        for index in action.elements() {
            if !obs.elements.iter().any(|e| e.index == index) {
                return Passage::refused(
                    PolicyDecision::Refuse,
                    format!(
                        "there is no element [{index}] in the page's list; use a number from the \
                         current list"
                    ),
                );
            }
        }
        match action {
            Action::Goto { url } | Action::NewTab { url: Some(url) } => {
                self.open(tab, obs, action, url).await
            }
            Action::NewTab { url: None } | Action::SwitchTab { .. } | Action::CloseTab { .. } => {
                let Some(tab) = tab else {
                    return Passage::refused(PolicyDecision::Refuse, "no tab yet".to_owned());
                };
                let permit = Permit(());
                match tabs::run(self.browser, tab, action, &permit).await {
                    Some(o) => Passage {
                        verdict: Verdict::new(PolicyDecision::Allow, "a tab of the task"),
                        ran: Ran::Tab(o),
                        used: Vec::new(),
                    },
                    None => Passage::refused(PolicyDecision::Refuse, "not a tab action".into()),
                }
            }
            _ if !action.runs_in_page() => Passage {
                verdict: Verdict::new(PolicyDecision::Allow, "touches no page"),
                ran: Ran::Host,
                used: Vec::new(),
            },
            _ => match tab {
                Some(tab) => self.page(tab, obs, action).await,
                None => Passage::refused(
                    PolicyDecision::Refuse,
                    "no page yet: open one with goto first".to_owned(),
                ),
            },
        }
    }

    /// A `goto` or `new_tab` to `url`.
    async fn open(
        &self,
        tab: Option<i64>,
        obs: &Observation,
        action: &Action,
        url: &str,
    ) -> Passage {
        if let Err(refused) = self.sites.check(url) {
            return Passage::refused(PolicyDecision::Refuse, format!("not opened: {refused}"));
        }
        let mut verdict = Verdict::new(PolicyDecision::Allow, "the site lists allow it");
        if let Some(entry) = self.sites.ask_first(url) {
            let what = approval::asking(
                action,
                None,
                obs,
                "visit",
                &format!("you asked to approve everything on {entry}"),
            );
            match self.decide(&what, action).await {
                Ok(v) => verdict = v,
                Err(p) => return p,
            }
        }
        let permit = Permit(());
        let ran = match (action, tab) {
            (Action::Goto { .. }, Some(tab)) => {
                Ran::Opened(self.browser.navigate(tab, url, &permit).await)
            }
            (Action::Goto { .. }, None) => Ran::Opened(self.browser.open_tab(url, &permit).await),
            (_, Some(tab)) => match tabs::run(self.browser, tab, action, &permit).await {
                Some(o) => Ran::Tab(o),
                None => Ran::Not("not a tab action".into()),
            },
            (_, None) => Ran::Opened(self.browser.open_tab(url, &permit).await),
        };
        Passage { verdict, ran, used: Vec::new() }
    }

    /// Asks (or finds an approval that answers): the verdict, or the
    /// passage of a rejected action.
    async fn decide(&self, what: &Approval, action: &Action) -> Result<Verdict, Passage> {
        if let Some(granted) = self.grants.covering(&what.kind, &what.site) {
            return Ok(Verdict::new(
                PolicyDecision::Approved,
                format!("{}; {granted}", what.reason),
            ));
        }
        tracing::info!(action = action.name(), reason = %what.reason, "waiting for approval");
        let decision = self.asker.ask(what, action).await;
        match decision {
            Decision::Approved | Decision::ApprovedForTask | Decision::ApprovedOnSite => {
                self.grants.remember(decision, &what.kind, &what.site);
                let by = match decision {
                    Decision::ApprovedForTask => "the user approved it for this task",
                    Decision::ApprovedOnSite => "the user approved it always on this site",
                    _ => "the user approved it",
                };
                Ok(Verdict::new(PolicyDecision::Approved, format!("{}; {by}", what.reason)))
            }
            Decision::Rejected | Decision::Unasked => {
                let why = not_approved(decision);
                Err(Passage {
                    verdict: Verdict::new(
                        PolicyDecision::Rejected,
                        format!("{}; {why}", what.reason),
                    ),
                    ran: Ran::Not(why),
                    used: Vec::new(),
                })
            }
        }
    }

    /// A page action.
    async fn page(&self, tab: i64, obs: &Observation, action: &Action) -> Passage {
        let element = action.element().and_then(|i| obs.elements.iter().find(|e| e.index == i));
        // 2. The frame the element is in, and where it leads as listed.
        if let Some(refused) = self.off_limits(element, None) {
            return Passage::refused(PolicyDecision::Refuse, refused);
        }
        // 3. What it would set off.
        let stakes = if policy::activates(action, element) {
            match self.browser.stakes(tab, action.clone()).await {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::debug!(action = action.name(), "no stakes from the page: {e}");
                    None
                }
            }
        } else {
            None
        };
        if let Some(refused) = stakes.as_ref().and_then(|s| self.off_limits(None, Some(s))) {
            return Passage::refused(PolicyDecision::Refuse, refused);
        }
        // 4–5. Judged, and asked.
        let page_site = element
            .and_then(|e| e.origin.as_deref())
            .or(stakes.as_ref().map(|s| s.origin.as_str()).filter(|o| !o.is_empty()))
            .unwrap_or(&obs.url);
        let mut verdict =
            Verdict::new(PolicyDecision::Allow, "nothing it sets off waits for the user");
        let mut approved = false;
        let asking = if let Some(j) = policy::judge(action, element, stakes.as_ref(), obs) {
            Some(approval::asking(
                action,
                element,
                obs,
                &j.kind,
                &format!("{}; Errand asks before such actions", j.reason),
            ))
        } else if approval::changes_something(action) {
            self.sites.ask_first(page_site).map(|entry| {
                approval::asking(
                    action,
                    element,
                    obs,
                    "change",
                    &format!("you asked to approve everything on {entry}"),
                )
            })
        } else {
            None
        };
        if let Some(what) = asking {
            match self.decide(&what, action).await {
                Ok(v) => {
                    verdict = v;
                    approved = true;
                }
                Err(p) => return p,
            }
        }
        // 6. Dialog answers, secrets.
        let wanted_accept = action.dialog().dialog == Some(DialogChoice::Accept);
        let to_run = if approved {
            action.accepting_dialogs()
        } else if wanted_accept {
            action.declining_dialogs()
        } else {
            action.clone()
        };
        let document = secrets::document_of(obs, &to_run).to_owned();
        let (to_send, used) = match self.secrets.substitute(&to_run, &document) {
            Ok(s) => s,
            Err(e) => return Passage::refused(PolicyDecision::Refuse, e.to_string()),
        };
        let guard = Guard {
            only_on: if used.is_empty() { None } else { secrets::origin_of(&document) },
            secret_field: used.iter().any(|f| !f.any_field),
            secrets: used.iter().map(|f| f.value.clone()).collect(),
            permit: Permit(()),
        };
        // 7. It runs; a dialog it opened is judged by its text.
        let mut effect = tabs::act(self.browser, self.uploads, tab, &to_send, guard.clone()).await;
        if !approved {
            if let Ok(e) = &effect {
                if let Some(again) = self.dialog_again(e, action, element, obs, wanted_accept).await
                {
                    match again {
                        Ok(v) => {
                            verdict = v;
                            let accepting = to_send.accepting_dialogs();
                            effect =
                                tabs::act(self.browser, self.uploads, tab, &accepting, guard).await;
                        }
                        Err(p) => return Passage { used, ..p },
                    }
                }
            }
        }
        // 8. A refused page reached anyway is left.
        if let Ok(e) = &effect {
            if e.url_changed {
                if let Err(refused) = self.sites.check(&e.url) {
                    let back = self.leave(tab).await;
                    let why = format!("the tab reached {}: {refused}. {back}", cut(&e.url, 120));
                    return Passage {
                        verdict: Verdict::new(PolicyDecision::Refuse, why.clone()),
                        ran: Ran::Not(why),
                        used,
                    };
                }
            }
        }
        Passage { verdict, ran: Ran::Page(effect), used }
    }

    /// After an action that opened a `confirm()`/`prompt()` Errand declined:
    /// `Some(Ok)` to run it again accepting the dialog (the person approved
    /// what its message says, or it says nothing that waits and the model
    /// wanted it accepted), `Some(Err)` when the person said no, `None` to
    /// leave it declined.
    async fn dialog_again(
        &self,
        effect: &Effect,
        action: &Action,
        element: Option<&ElementInfo>,
        obs: &Observation,
        wanted_accept: bool,
    ) -> Option<Result<Verdict, Passage>> {
        let declined: Vec<_> = effect
            .dialogs
            .iter()
            .filter(|d| {
                matches!(d.kind.as_str(), "confirm" | "prompt") && !d.accepted && d.by_default
            })
            .collect();
        if declined.is_empty() {
            return None;
        }
        let judged = declined.iter().find_map(|d| policy::judge_dialog(&d.message));
        match judged {
            Some(j) => {
                let what = approval::asking(action, element, obs, &j.kind, &j.reason);
                Some(self.decide(&what, action).await)
            }
            None if wanted_accept => Some(Ok(Verdict::new(
                PolicyDecision::Allow,
                "the dialog it opened asks nothing that waits for the user",
            ))),
            None => None,
        }
    }

    /// Why acting on `element` (or on what `stakes` say) is refused by the
    /// site lists: its frame's origin, or where it leads.
    fn off_limits(&self, element: Option<&ElementInfo>, stakes: Option<&Stakes>) -> Option<String> {
        let frame = element.and_then(|e| e.origin.as_deref());
        let origin = stakes.map(|s| s.origin.as_str()).filter(|o| !o.is_empty() && *o != "null");
        for origin in frame.into_iter().chain(origin) {
            if let Err(refused) = self.sites.check(origin) {
                return Some(format!(
                    "not done: the element is in a frame of {}: {refused}",
                    cut(origin, 120)
                ));
            }
        }
        let target = element.and_then(|e| e.target.as_deref());
        let leads = stakes.and_then(|s| s.target.as_deref());
        for target in target.into_iter().chain(leads) {
            if let Err(refused) = self.sites.check(target) {
                return Some(format!("not done: it would open {}: {refused}", cut(target, 120)));
            }
        }
        None
    }

    /// Goes back in the tab's history (off a page the site lists refuse):
    /// what became of it, in words.
    pub async fn leave(&self, tab: i64) -> String {
        match self.browser.act(tab, Action::GoBack {}, Guard::plain(Permit(()))).await {
            Ok(effect) if effect.url_changed => format!("Errand went back to {}", effect.url),
            Ok(_) | Err(_) => "Errand could not go back".to_owned(),
        }
    }

    /// Opens the page a task starts on (the address the user gave): in
    /// `tab`, or in a new tab; refused when the site lists refuse it.
    pub async fn start(&self, tab: Option<i64>, url: &str) -> Result<TabInfo, BrowserError> {
        if let Err(refused) = self.sites.check(url) {
            return Err(BrowserError::Refused {
                code: errand_protocol::ErrorCode::NotAllowed,
                message: format!("not opened: {refused}"),
            });
        }
        let permit = Permit(());
        match tab {
            Some(tab) => self.browser.navigate(tab, url, &permit).await,
            None => self.browser.open_tab(url, &permit).await,
        }
    }
}

/// The site an action's approval is given for.
pub fn site(obs: &Observation, element: Option<&ElementInfo>) -> String {
    site_of(element.and_then(|e| e.origin.as_deref()).unwrap_or(&obs.url))
}
