//! Where the first observation of a fresh page goes: injecting the loader,
//! importing the glue, fetching + compiling + instantiating the WASM build
//! (or importing the JS build under a CSP that refuses WebAssembly), the
//! first walk, and the messaging around it — side by side with injecting
//! browser-use's indexer (`buildDomTree.js` 0.5.11) and its first run on
//! the same page, in the same Chromium run.
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run -p errand-e2e --example bench_load [-- ROUNDS]
//! ```
//!
//! Every round opens a fresh tab of a generated 1k-element page (each
//! build, then the reference). Prints a markdown table of medians (p10–p90)
//! and writes `target/bench/load.json`. The reference file comes from
//! `.tools/browser-use-0.5.11/index.js` (`bench_observe` downloads it);
//! without it that column is left out.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::cdp::Page;
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::stats::Summary;
use serde_json::{Value, json};

fn page_1k() -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=utf-8><title>generated</title>\
         <style>.r{display:flex;gap:6px;padding:2px;font:13px sans-serif}</style></head><body>\n",
    );
    for i in 0..100 {
        html.push_str(&format!(
            "<div class=r><span>Item {i}</span><b>note</b>\
             <button aria-label=\"w{i}b\">Buy</button>\
             <a href=\"#r{i}\" aria-label=\"w{i}a\">Details</a>\
             <input aria-label=\"w{i}i\">\
             <button style=\"display:none\">Hidden</button>\
             <i>decoy</i><span>more text</span><em>x</em></div>\n"
        ));
    }
    html.push_str("</body></html>\n");
    html
}

fn open(browser: &TestBrowser, url: &str) -> Result<Page> {
    let tab = browser.cdp().new_page(url)?;
    tab.wait_for(
        "document.readyState === 'complete' && location.href !== 'about:blank'",
        Duration::from_secs(60),
    )?;
    Ok(tab)
}

fn close(browser: &TestBrowser, tab: &Page) {
    let _ = browser.cdp().call("Target.closeTarget", json!({"targetId": tab.target_id}), None);
}

/// One first observation of a fresh tab, timed in the service worker, with
/// the loader's own marks and, afterwards in the same tab, a standalone
/// fetch and compile of the module (to split the loader's one call).
fn errand_first(sw: &Page, tab_id: i64) -> Result<Value> {
    let msg = json!({"v": 1, "id": 1, "kind": "page", "tab_id": tab_id,
                     "command": {"op": "observe", "marks": false}});
    sw.eval(&format!(
        "(async () => {{
           const msg = {msg};
           const target = {{ tabId: msg.tab_id }};
           const t0 = performance.now();
           await chrome.scripting.executeScript({{ target, files: ['extension/loader.js'] }});
           const t1 = performance.now();
           const answer = await chrome.tabs.sendMessage(msg.tab_id, msg, {{ frameId: 0 }});
           const t2 = performance.now();
           const [{{ result: marks }}] = await chrome.scripting.executeScript({{ target, func: async (wasmUrl, jsUrl) => {{
             const out = {{ ...globalThis.__errandLoadTimes }};
             let t = performance.now();
             const bytes = await (await fetch(wasmUrl)).arrayBuffer();
             out.refetch_wasm = performance.now() - t;
             t = performance.now();
             try {{ await WebAssembly.compile(bytes); out.recompile_wasm = performance.now() - t; }} catch {{}}
             t = performance.now();
             await (await fetch(jsUrl)).text();
             out.refetch_js = performance.now() - t;
             return out;
           }}, args: [chrome.runtime.getURL('extension/pkg/wasm/errand_page_bg.wasm'),
                      chrome.runtime.getURL('extension/pkg/js/errand_page_bg.wasm.js')] }});
           return {{ inject: t1 - t0, total: t2 - t0, marks, answer }};
         }})()"
    ))
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let root = repo_root();
    let out_dir = root.join("target/bench");
    let pages = out_dir.join("load-pages");
    std::fs::create_dir_all(&pages)?;
    std::fs::write(pages.join("gen-1k.html"), page_1k())?;
    let server = FixtureServer::start_in(pages)?;
    let reference = std::fs::read_to_string(root.join(".tools/browser-use-0.5.11/index.js")).ok();
    if reference.is_none() {
        eprintln!(
            "no .tools/browser-use-0.5.11/index.js (run bench_observe once): no reference column"
        );
    }

    let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))?;
    let mut samples: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut push = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            samples.entry(k.to_owned()).or_default().push(v);
        }
    };
    for round in 0..=rounds {
        // Round 0 warms the browser's caches and is not counted.
        let counted = round > 0;
        for (build, path) in [("wasm", "gen-1k.html"), ("js", "csp/gen-1k.html")] {
            let tab = open(&browser, &server.url(&format!("/{path}")))?;
            let cs = ContentScript::of(&browser, &tab)?;
            let sw = browser.service_worker()?;
            let r = errand_first(&sw, cs.tab_id)?;
            close(&browser, &tab);
            let ok = &r["answer"]["ok"];
            if ok.is_null() {
                bail!("no observation: {r}");
            }
            if ok["build"] != json!(build) {
                bail!("expected the {build} build, got {}", ok["build"]);
            }
            if !counted {
                continue;
            }
            let m = &r["marks"];
            let at = |k: &str| m[k].as_f64();
            let span = |a: &str, b: &str| Some(at(b)? - at(a)?);
            let walk = ok["elapsed_ms"].as_f64();
            let total = r["total"].as_f64();
            let inject = r["inject"].as_f64();
            push(&format!("{build}.inject"), inject);
            push(&format!("{build}.glue"), span("start", "wasm_glue"));
            if build == "wasm" {
                push("wasm.fetch_compile_instantiate", span("wasm_glue", "wasm_ready"));
                push("wasm.refetch", at("refetch_wasm"));
                push("wasm.recompile", at("recompile_wasm"));
                push("wasm.ready", span("start", "wasm_ready"));
            } else {
                push("js.wasm_refused", span("wasm_glue", "wasm_refused"));
                push("js.import_js", span("wasm_refused", "js_ready"));
                push("js.refetch", at("refetch_js"));
                push("js.ready", span("start", "js_ready"));
            }
            push(&format!("{build}.walk"), walk);
            push(&format!("{build}.total"), total);
        }
        if let Some(src) = &reference {
            let tab = open(&browser, &server.url("/gen-1k.html"))?;
            let t = Instant::now();
            tab.eval(&format!("window.__bdt = {src}; 0"))?;
            let inject = t.elapsed().as_secs_f64() * 1000.0;
            let run = tab.eval(
                "(() => { const t0 = performance.now();
                   window.__bdt({doHighlightElements: false, focusHighlightIndex: -1, viewportExpansion: -1, debugMode: false});
                   return performance.now() - t0; })()",
            )?;
            let total = t.elapsed().as_secs_f64() * 1000.0;
            close(&browser, &tab);
            if counted {
                push("ref.inject", Some(inject));
                push("ref.walk", run.as_f64());
                push("ref.total", Some(total));
            }
        }
    }

    let mut json_out = serde_json::Map::new();
    println!("| step (1k-element page, fresh tab) | median ms (p10–p90) |\n| --- | --- |");
    for (k, v) in &samples {
        let s = Summary::of(v);
        println!("| {k} | {:.1} ({:.1}–{:.1}) |", s.median, s.p10, s.p90);
        json_out.insert(k.clone(), s.to_json());
    }
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(out_dir.join("load.json"), serde_json::to_string_pretty(&json_out)?)?;
    Ok(())
}
