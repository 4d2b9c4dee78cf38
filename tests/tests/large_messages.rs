//! A host → extension message over the browser's 1 MiB limit arrives
//! whole: the host sends it as `chunk` envelopes, the service worker joins
//! them (`reassemble` in `extension/sw.js`) and hands the side panels the
//! message, never a chunk.
//!
//! The test listens as a side panel does — a `panel` port opened from an
//! extension page — so it checks the service worker's relay, not the panel's
//! rendering. Needs Chromium, the built extension and the built host, like
//! the rest of the suite.

use std::time::Duration;

use anyhow::{Result, ensure};
use errand_e2e::model::Reply;
use errand_e2e::rig::Rig;
use errand_e2e::side_panel::{chrome_tab_id, panel_url};
use serde_json::json;

/// About 1.5 MiB of text with what JSON escapes (quotes, backslashes,
/// newlines) and multi-byte characters, with a recognisable end.
fn long_answer() -> String {
    let mut answer = String::new();
    while answer.len() < 1_572_864 {
        answer.push_str("Große Antwort, \"zitiert\", C:\\Pfad ✓ 𝄞 中文\n");
    }
    answer.push_str("THE END");
    answer
}

fn run() -> Result<()> {
    let answer = long_answer();
    let reply = Reply::json(&json!({
        "evaluation_previous_goal": "Read it", "memory": "", "next_goal": "Report",
        "actions": [{"done": {"text": answer, "success": true}}],
    }));
    let rig = Rig::start(move |_req, call| match call {
        0 => reply.clone(),
        n => panic!("unexpected model call {n}: the task should have finished after call 0"),
    });
    let tab = rig.browser.new_page(&rig.fixtures.url("/submit.html"))?;
    let tab_id = chrome_tab_id(&rig.browser, &tab)?;

    // An extension page listening on a `panel` port, as a side panel does.
    let listener = rig.browser.cdp().new_page(&panel_url())?;
    listener.wait_for_load(Duration::from_secs(10))?;
    listener.eval(&format!(
        "(() => {{
            window.heard = [];
            const port = chrome.runtime.connect({{ name: 'panel' }});
            port.onMessage.addListener((m) => window.heard.push(m));
            port.postMessage({{ v: 1, id: 1, kind: 'start_task', task: 'Read everything', tab_id: {tab_id} }});
            return true;
        }})()"
    ))?;
    let finished =
        "window.heard.some((m) => m.kind === 'task_event' && m.event?.type === 'finished')";
    if let Err(e) = listener.wait_for(finished, Duration::from_secs(60)) {
        let kinds =
            listener.eval("window.heard.map((m) => m.kind + ':' + (m.event?.type ?? ''))")?;
        anyhow::bail!("the task did not finish: {e:#}\nheard: {kinds}");
    }
    rig.model.check()?;

    let heard = listener.eval(
        "(() => ({
            kinds: window.heard.map((m) => m.kind),
            outcome: window.heard.find((m) => m.event?.type === 'finished').event.outcome,
            step: window.heard.find((m) => m.event?.type === 'step')?.event,
        }))()",
    )?;
    let kinds = heard["kinds"].as_array().cloned().unwrap_or_default();
    ensure!(!kinds.contains(&json!("chunk")), "a chunk reached the panel: {kinds:?}");
    let outcome = &heard["outcome"];
    ensure!(outcome["status"] == "done", "the task ended as {}", outcome["status"]);
    let got = outcome["answer"].as_str().unwrap_or_default();
    ensure!(
        got == answer,
        "the panel got an answer of {} bytes ending {:?}, not the model's {} bytes",
        got.len(),
        &got[got.len().saturating_sub(20)..],
        answer.len()
    );
    let step = &heard["step"];
    let done_text = &step["actions"][0]["action"]["done"]["text"];
    ensure!(
        done_text.as_str() == Some(answer.as_str()),
        "the step event's done action lost text: {} bytes",
        done_text.as_str().map_or(0, str::len)
    );
    // The step event really was over the limit, and went in chunks.
    let size = serde_json::to_string(step).map_or(0, |s| s.len());
    ensure!(size > errand_protocol::MAX_TO_EXTENSION, "the step event is only {size} bytes");
    let log = rig.browser.host_log_path();
    rig.browser.wait_until("the host's log to tell of chunks", Duration::from_secs(5), || {
        Ok(std::fs::read_to_string(&log).unwrap_or_default().contains("in chunks"))
    })?;

    rig.done("an_answer_over_a_mebibyte_reaches_the_panels_whole");
    Ok(())
}

#[test]
fn an_answer_over_a_mebibyte_reaches_the_panels_whole() {
    run().unwrap_or_else(|e| panic!("{e:#}"));
}
