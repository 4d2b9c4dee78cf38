//! A host → extension message over the browser's 1 MiB limit arrives
//! whole: the host sends it as `chunk` envelopes, the service worker joins
//! them (the crate's `ChunkJoiner` in `extension/sw.js`) and hands the side panels the
//! message, never a chunk. The same joiner (the extension crate's WASM
//! build, as the service worker loads it) refuses bad sets with the
//! sentences the service worker logs, and the service worker goes on
//! relaying.
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

    bad_sets_are_refused(&listener)?;
    rig.done("an_answer_over_a_mebibyte_reaches_the_panels_whole");
    Ok(())
}

/// Bad sets of chunks, fed to the extension's WASM `ChunkJoiner` (the one
/// `sw.js` runs) in an extension page: out of order, another message's
/// chunk, malformed, a new set before the last completed, the timeout,
/// over 64 MiB, the wrong id. Each is refused with its sentence; then the
/// service worker still answers the panel's port.
fn bad_sets_are_refused(page: &errand_e2e::cdp::Page) -> Result<()> {
    let got = page.eval(
        r#"(async () => {
            const m = await import('/extension/pkg/worker/errand_page.js');
            await m.default({ module_or_path: '/extension/pkg/worker/errand_page_bg.wasm' });
            const j = new m.ChunkJoiner();
            const chunk = (of, index, count, data) =>
                JSON.stringify({ v: 1, id: of, kind: 'chunk', of, index, count, data });
            const refused = (f) => { try { f(); return null; } catch (e) { return e.message; } };
            const whole = JSON.stringify({ v: 1, id: 7, kind: 'get_status' });
            const [a, b] = [whole.slice(0, 10), whole.slice(10)];
            const out = {};
            out.first = j.accept(chunk(7, 0, 2, a)) ?? null;
            out.joined = j.accept(chunk(7, 1, 2, b)) ?? null;
            out.outOfOrder = refused(() => j.accept(chunk(7, 1, 2, b)));
            j.accept(chunk(7, 0, 2, a));
            out.otherMessage = refused(() => j.accept(chunk(8, 1, 2, b)));
            j.accept(chunk(7, 0, 2, a));
            out.malformed = refused(() => j.accept('{"v":1,"id":7,"kind":"chunk","of":-1}'));
            out.pendingAfterMalformed = j.pending();
            j.accept(chunk(6, 0, 2, '{'));
            j.accept(chunk(7, 0, 2, a));
            out.superseded = j.superseded() ?? null;
            out.expired = j.expire() ?? null;
            const big = 'x'.repeat(921600);
            out.tooLarge = null;
            for (let i = 0; i < 80 && !out.tooLarge; i++) {
                out.tooLarge = refused(() => j.accept(chunk(9, i, 80, big)));
            }
            out.pending = j.pending();
            out.wrongId = refused(() => j.accept(chunk(8, 0, 1, whole)));
            return out;
        })()"#,
    )?;
    let says = |key: &str| got[key].as_str().unwrap_or_default().to_owned();
    ensure!(got["first"].is_null(), "a first chunk joined to {}", got["first"]);
    ensure!(says("joined").contains(r#""kind":"get_status""#), "joined: {}", got["joined"]);
    let expected = [
        ("outOfOrder", "dropped the chunked message 7 from the host: chunk 1/2 is out of order"),
        ("otherMessage", "dropped the chunked message 8 from the host: chunk 1/2 is out of order"),
        ("malformed", "dropped the chunked message 7 from the host: a malformed chunk"),
        (
            "superseded",
            "dropped the chunked message 6 from the host: message 7 started before it was complete",
        ),
        ("expired", "dropped the chunked message 7 from the host: it did not arrive in time"),
        ("tooLarge", "dropped the chunked message 9 from the host: it is over 64 MiB"),
        ("wrongId", "dropped the chunked message 8 from the host: the joined text is message"),
    ];
    for (key, sentence) in expected {
        ensure!(says(key).starts_with(sentence), "{key}: {:?}, not {sentence:?}…", got[key]);
    }
    ensure!(got["pendingAfterMalformed"] == false && got["pending"] == false, "{got}");

    // The service worker still relays: the panel's port gets its status.
    page.eval(
        "(() => {
            const port = chrome.runtime.connect({ name: 'panel' });
            window.after = [];
            port.onMessage.addListener((m) => window.after.push(m));
            port.postMessage({ v: 1, id: 2, kind: 'get_status' });
            return true;
        })()",
    )?;
    page.wait_for("window.after.some((m) => m.re === 2)", Duration::from_secs(10))?;
    Ok(())
}

#[test]
fn an_answer_over_a_mebibyte_reaches_the_panels_whole() {
    run().unwrap_or_else(|e| panic!("{e:#}"));
}
