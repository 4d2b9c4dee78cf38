//! Talking to the content script of a tab the way the service worker does,
//! from the service worker itself.
//!
//! [`ContentScript::command`] calls, in the extension's real service worker,
//! the very relay the host's `page` requests go through
//! (`browserRequests.page` in `extension/sw.js`, exposed to the extension's
//! own contexts as `globalThis.errandBrowserRequests`): it waits for the
//! tab's load, sends the `page` envelope to the top frame, and — when no
//! content script answers yet — injects `extension/loader.js` and retries.
//! So the real loader picks the real build (WASM, or JS under a strict CSP),
//! and the real Rust crate answers. Only the native host's hop is left out
//! (the end-to-end tests in `e2e.rs` cover it), which lets the observation
//! tests ask for exactly the command they check.

use std::cell::Cell;

use anyhow::{Result, bail};
use errand_protocol::{Envelope, Observation};
use serde_json::{Value, json};

use crate::browser::TestBrowser;
use crate::cdp::Page;

/// A tab's content script, reached through the service worker.
pub struct ContentScript {
    sw: Page,
    /// The tab's `chrome.tabs` id.
    pub tab_id: i64,
    next_id: Cell<u64>,
}

impl ContentScript {
    /// The content script of `tab` (injected on the first command).
    pub fn of(browser: &TestBrowser, tab: &Page) -> Result<ContentScript> {
        // Right after a tab opens, an evaluation in the service worker can
        // land in a context without extension APIs (`chrome is not
        // defined`); attach again and retry.
        let mut last = None;
        for _ in 0..20 {
            let sw = browser.service_worker()?;
            match sw.eval("typeof chrome !== 'undefined' && !!chrome.tabs && !!globalThis.errandBrowserRequests") {
                Ok(Value::Bool(true)) => {
                    let tab_id = crate::side_panel::chrome_tab_id(browser, tab)?;
                    return Ok(ContentScript { sw, tab_id, next_id: Cell::new(1) });
                }
                other => last = Some(format!("{other:?}")),
            }
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
        bail!("the service worker never offered chrome.tabs: {}", last.unwrap_or_default())
    }

    /// The content script of the tab whose `chrome.tabs` id is `tab_id`.
    pub fn of_tab_id(browser: &TestBrowser, tab_id: i64) -> Result<ContentScript> {
        Ok(ContentScript { sw: browser.service_worker()?, tab_id, next_id: Cell::new(1) })
    }

    /// Sends one `page` command (`{"op": …}`) and returns the reply envelope.
    pub fn command(&self, command: Value) -> Result<Value> {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let msg =
            json!({"v": 1, "id": id, "kind": "page", "tab_id": self.tab_id, "command": command});
        let answer = self.sw.eval(&format!(
            "(async () => {{
               try {{ return {{ ok: await globalThis.errandBrowserRequests.page({msg}) }}; }}
               catch (e) {{ return {{ failed: String(e?.message ?? e) }}; }}
             }})()"
        ))?;
        match (answer.get("ok"), answer.get("failed")) {
            (Some(ok), _) => {
                if ok["re"] != json!(id) {
                    bail!("the reply answers {} instead of {id}: {ok}", ok["re"]);
                }
                Ok(ok.clone())
            }
            (_, Some(why)) => bail!("the content script failed: {why}"),
            _ => bail!("no answer from the content script: {answer}"),
        }
    }

    /// Sends `message` (a `page` envelope) through the same relay and
    /// returns the reply as the JSON text the host receives: the service
    /// worker hands the host the content script's reply object as it is,
    /// and the browser writes it as `JSON.stringify` does.
    pub fn exchange_text(&self, message: &Value) -> Result<String> {
        let answer = self.sw.eval(&format!(
            "(async () => JSON.stringify(await globalThis.errandBrowserRequests.page({message})))()"
        ))?;
        match answer.as_str() {
            Some(text) => Ok(text.to_owned()),
            None => bail!("no reply text from the content script: {answer}"),
        }
    }

    /// `JSON.stringify(JSON.parse(text))`, in the service worker: what a
    /// JSON text becomes on its way to the host as an object.
    pub fn reparse(&self, text: &str) -> Result<String> {
        let quoted = serde_json::to_string(text)?;
        match self.sw.eval(&format!("JSON.stringify(JSON.parse({quoted}))"))? {
            Value::String(text) => Ok(text),
            other => bail!("JSON.stringify gave {other}"),
        }
    }

    /// Observes the page (drawing the marks when `marks`).
    pub fn observe(&self, marks: bool) -> Result<Observation> {
        self.observe_with(json!({"op": "observe", "marks": marks}))
    }

    /// Observes the whole page, never starting from the previous observation.
    pub fn observe_full(&self, marks: bool) -> Result<Observation> {
        self.observe_with(json!({"op": "observe", "marks": marks, "full": true}))
    }

    /// Observes as the host does: the reply may be a diff against the
    /// observation numbered `since` (left unresolved here).
    pub fn observe_since(&self, marks: bool, since: u64) -> Result<Observation> {
        self.observe_with(json!({"op": "observe", "marks": marks, "since": since}))
    }

    fn observe_with(&self, command: Value) -> Result<Observation> {
        let reply = self.command(command)?;
        let env = Envelope::decode_value(reply.clone())
            .map_err(|e| anyhow::anyhow!("unreadable reply {reply}: {e}"))?;
        match env.body {
            errand_protocol::Body::Observation(o) => Ok(o),
            other => bail!("expected an observation, got {other:?}"),
        }
    }

    /// Runs one action (`{"click": {"index": 3}}`); returns the reply envelope.
    pub fn act(&self, action: Value) -> Result<Value> {
        self.command(json!({"op": "act", "action": action}))
    }
}
