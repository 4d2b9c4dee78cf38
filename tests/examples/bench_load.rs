//! Where the first observation of a fresh page goes: the loader (declared
//! in the manifest, so already in the page), importing the glue, fetching +
//! compiling + instantiating the WASM build (or importing the JS build under
//! a CSP that refuses WebAssembly), the first walk, and the messaging around
//! it — side by side with injecting browser-use's indexer
//! (`buildDomTree.js` 0.5.11) and its first run on the same page, in the
//! same Chromium run.
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run -p errand-e2e --example bench_load [-- ROUNDS]
//! ```
//!
//! `BENCH_CHROMIUM_ARGS` adds Chromium flags (split at whitespace), for
//! experiments such as `--js-flags=--no-wasm-lazy-compilation`;
//! `BENCH_EXTENSION_DIR` loads another unpacked build (a before/after);
//! `BENCH_BUILDS=js` (or `wasm`) measures one build only.
//!
//! Every round opens a fresh tab of a generated 1k-element page (each
//! build, then the reference). Errand's tab is opened the way a task opens
//! one: the service worker creates it, waits until the browser says it is
//! `complete` (as `sw.js`'s `loaded` does) and sends an `observe` at once;
//! "complete → observation" is the task's wait; the same again on a copy of
//! the page whose picture comes 300 ms late (`img.*`: its `load` comes well
//! after the content script runs, which is told `prepare` while the page
//! loads). The reference is injected
//! and run as soon as the page reports `complete` to the driver. Prints a
//! markdown table of medians (p10–p90) and writes `target/bench/load.json`.
//! The reference file comes from `.tools/browser-use-0.5.11/index.js`
//! (`bench_observe` downloads it); without it that column is left out.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::cdp::Page;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::stats::Summary;
use serde_json::{Value, json};

/// How long after `complete` the "still" observation is sent: past the
/// readiness rule's 400 ms quiet window after `load` (`ready::FIRST_QUIET_MS`).
const STILL_MS: u32 = 600;

fn page_1k() -> String {
    errand_e2e::fixtures::generated_page(100)
}

/// The same page with a picture that comes 300 ms late: its `load` comes
/// well after the document is parsed (and the content script runs), as on
/// most real pages.
fn page_1k_late_picture() -> String {
    page_1k()
        .replace("</body>", "<img src=\"/slow/pic.svg?ms=300\" width=16 height=16 alt=\"\"></body>")
}

const PICTURE: &str = "<svg xmlns='http://www.w3.org/2000/svg' width='16' height='16'>\
                       <rect width='16' height='16' fill='teal'/></svg>";

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

/// One first observation of a fresh tab, as a task gets it: the service
/// worker opens the tab, waits for `complete`, sends an `observe` at once
/// and times the reply; then reads the loader's marks (page clock, with the
/// page's load end) and, in the same tab, a standalone fetch and compile of
/// the module (to split the loader's one call). With `wait_ms`, the command
/// is sent that long after `complete` instead (past the readiness rule's
/// quiet window after `load`, `extension/src/ready.rs`): what loading and
/// the first walk cost once the page has been still.
fn errand_first(sw: &Page, url: &str, wait_ms: u32, driven: bool) -> Result<Value> {
    sw.eval(&format!(
        "(async () => {{
           const t0 = performance.now();
           // Opened as the host opens a task's tab (then driven: told to
           // prepare once loaded), or as the user opens one.
           const tab = {driven}
             ? {{ id: (await globalThis.errandBrowserRequests.open_tab({{ id: 1, url: {url} }})).tab_id }}
             : await chrome.tabs.create({{ url: {url}, active: true }});
           await new Promise((done) => {{
             const check = (id, info, t) => {{
               if (id === tab.id && (info.status ?? t?.status) === 'complete') {{
                 chrome.tabs.onUpdated.removeListener(check);
                 done();
               }}
             }};
             chrome.tabs.onUpdated.addListener(check);
             chrome.tabs.get(tab.id).then((t) => check(tab.id, {{}}, t));
           }});
           await new Promise((done) => setTimeout(done, {wait_ms}));
           // The content script's form of the host's envelope, as sw.js makes it.
           const msg = await globalThis.errandToTab({{ v: 1, id: 1, kind: 'page', tab_id: tab.id, command: {{ op: 'observe', marks: false }} }});
           const t1 = performance.now();
           let answer;
           try {{
             answer = await chrome.tabs.sendMessage(tab.id, msg, {{ frameId: 0 }});
           }} catch {{
             // Not there yet: what sw.js does, inject and retry.
             await chrome.scripting.executeScript({{ target: {{ tabId: tab.id }}, files: globalThis.errandLoaderFiles }});
             answer = await chrome.tabs.sendMessage(tab.id, msg, {{ frameId: 0 }});
             answer.injected = true;
           }}
           const t2 = performance.now();
           const [{{ result: marks }}] = await chrome.scripting.executeScript({{ target: {{ tabId: tab.id }}, func: async (wasmUrl, jsUrl) => {{
             const out = {{ ...globalThis.__errandLoadTimes }};
             out.load_end = performance.timing.loadEventEnd - performance.timeOrigin;
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
           await chrome.tabs.remove(tab.id);
           return {{ open: t1 - t0, observe: t2 - t1, total: t2 - t0, marks, answer }};
         }})()",
        url = json!(url),
    ))
}

/// The first observation of a page a task's tab navigates to (the task's
/// second page, and every one after): the service worker opens the tab at
/// `first` as the host does and observes it at `complete`, then navigates
/// it to `next` the way the host's `navigate` does (which answers once the
/// browser says `complete`) and times the `observe` sent at once. The new
/// document has a new content script instance and its own walk to make;
/// what it shares with the page before is the renderer process (a page of
/// the same site).
fn errand_navigated(sw: &Page, first: &str, next: &str) -> Result<Value> {
    sw.eval(&format!(
        "(async () => {{
           const requests = globalThis.errandBrowserRequests;
           const id = (await requests.open_tab({{ id: 1, url: {first} }})).tab_id;
           const observe = async () => {{
             const msg = await globalThis.errandToTab({{ v: 1, id: 1, kind: 'page', tab_id: id, command: {{ op: 'observe', marks: false }} }});
             const t = performance.now();
             const answer = await chrome.tabs.sendMessage(id, msg, {{ frameId: 0 }});
             return {{ answer, observe: performance.now() - t }};
           }};
           const before = await observe();
           const t0 = performance.now();
           await requests.navigate({{ id: 2, tab_id: id, url: {next} }});
           const t1 = performance.now();
           const after = await observe();
           const [{{ result: marks }}] = await chrome.scripting.executeScript({{ target: {{ tabId: id }}, func: () => {{
             const out = {{ ...globalThis.__errandLoadTimes }};
             out.load_end = performance.timing.loadEventEnd - performance.timeOrigin;
             return out;
           }} }});
           await chrome.tabs.remove(id);
           return {{ first: before.observe, navigate: t1 - t0, observe: after.observe, answer: after.answer, marks }};
         }})()",
        first = json!(first),
        next = json!(next),
    ))
}

/// The service worker, once an evaluation there sees the extension APIs
/// (right after launch it can land in a context without them).
fn service_worker(browser: &TestBrowser) -> Result<Page> {
    for _ in 0..40 {
        if let Ok(sw) = browser.service_worker() {
            if sw.eval("typeof chrome !== 'undefined' && !!chrome.tabs").ok() == Some(json!(true)) {
                return Ok(sw);
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    bail!("the service worker never offered chrome.tabs")
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let root = repo_root();
    let out_dir = root.join("target/bench");
    let pages = out_dir.join("load-pages");
    std::fs::create_dir_all(&pages)?;
    std::fs::write(pages.join("gen-1k.html"), page_1k())?;
    std::fs::write(pages.join("gen-1k-img.html"), page_1k_late_picture())?;
    std::fs::write(pages.join("gen-1k-next.html"), errand_e2e::fixtures::generated_page_next(100))?;
    std::fs::write(pages.join("pic.svg"), PICTURE)?;
    let server = FixtureServer::start_in(pages)?;
    let reference = std::fs::read_to_string(root.join(".tools/browser-use-0.5.11/index.js")).ok();
    if reference.is_none() {
        eprintln!(
            "no .tools/browser-use-0.5.11/index.js (run bench_observe once): no reference column"
        );
    }

    let browser =
        TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1").with_bench_env())?;
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
            if std::env::var("BENCH_BUILDS").is_ok_and(|only| only != build) {
                continue;
            }
            let sw = service_worker(&browser)?;
            let url = server.url(&format!("/{path}"));
            let r = errand_first(&sw, &url, 0, true)?;
            let still = errand_first(&sw, &url, STILL_MS, true)?;
            let plain = errand_first(&sw, &url, STILL_MS, false)?;
            let img_url = server.url(&format!("/{}", path.replace("gen-1k", "gen-1k-img")));
            let img = errand_first(&sw, &img_url, 0, true)?;
            let next_url = server.url(&format!("/{}", path.replace("gen-1k", "gen-1k-next")));
            let nav = errand_navigated(&sw, &url, &next_url)?;
            for r in [&r, &still, &plain, &img, &nav] {
                let ok = &r["answer"]["ok"];
                if ok.is_null() {
                    bail!("no observation: {r}");
                }
                if ok["build"] != json!(build) {
                    bail!("expected the {build} build, got {}", ok["build"]);
                }
            }
            if !counted {
                continue;
            }
            let ok = &r["answer"]["ok"];
            let m = &r["marks"];
            let at = |k: &str| m[k].as_f64();
            let span = |a: &str, b: &str| Some(at(b)? - at(a)?);
            let injected = |r: &Value| f64::from(u8::from(r["answer"]["injected"] == json!(true)));
            push(&format!("{build}.injected_by_sw"), Some(injected(&r) + injected(&still)));
            push(&format!("{build}.complete_to_observation"), r["observe"].as_f64());
            push(&format!("{build}.open_to_complete"), r["open"].as_f64());
            push(&format!("{build}.glue"), span("wasm_start", "wasm_glue"));
            push(&format!("{build}.loader_start_after_load_end"), span("load_end", "start"));
            push(&format!("{build}.crate_start_after_load_end"), span("load_end", "wasm_start"));
            if build == "wasm" {
                push("wasm.fetch_compile_instantiate", span("wasm_glue", "wasm_ready"));
                push("wasm.refetch", at("refetch_wasm"));
                push("wasm.recompile", at("recompile_wasm"));
                push("wasm.ready", span("wasm_start", "wasm_ready"));
                push("wasm.ready_after_load_end", span("load_end", "wasm_ready"));
            } else {
                push("js.wasm_refused", span("wasm_start", "wasm_refused"));
                push("js.import_js", span("wasm_refused", "js_ready"));
                push("js.refetch", at("refetch_js"));
                push("js.ready_after_load_end", span("load_end", "js_ready"));
            }
            push(&format!("{build}.walk"), ok["elapsed_ms"].as_f64());
            // The first observation's steps, each from the one before
            // (the loader's marks and the crate's, `errand_page::mark`).
            let seq = [
                "load_end",
                "command",
                "handle",
                "observe",
                "prewalked",
                "settled",
                "finished",
                "answered",
                "encoded",
                "reply",
            ];
            for (marks, name) in
                [(m, "split"), (&img["marks"], "img.split"), (&nav["marks"], "navigated.split")]
            {
                let at = |k: &str| marks[k].as_f64();
                let mut prev = "load_end";
                for k in seq.iter().skip(1) {
                    if at(k).is_some() {
                        push(
                            &format!("{build}.{name}.{prev}->{k}"),
                            Some(at(k).unwrap() - at(prev).unwrap()),
                        );
                        prev = k;
                    }
                }
            }
            push(
                &format!("{build}.split.ready_after_load_end"),
                span("load_end", if build == "wasm" { "wasm_ready" } else { "js_ready" }),
            );
            push(&format!("{build}.total"), r["total"].as_f64());
            push(&format!("{build}.still.observation"), still["observe"].as_f64());
            push(&format!("{build}.still.walk"), still["answer"]["ok"]["elapsed_ms"].as_f64());
            let sm = &still["marks"];
            let pspan = |m: &Value, a: &str, b: &str| Some(m[b].as_f64()? - m[a].as_f64()?);
            push(
                &format!("{build}.still.prepared_after_load_end"),
                pspan(sm, "load_end", "prepared"),
            );
            // The page whose picture comes late, observed at `complete`:
            // told `prepare` while it loads (the crate loaded, the code run
            // once, the kept walk at `load`).
            let im = &img["marks"];
            push(&format!("{build}.img.complete_to_observation"), img["observe"].as_f64());
            push(&format!("{build}.img.open_to_complete"), img["open"].as_f64());
            push(&format!("{build}.img.walk"), img["answer"]["ok"]["elapsed_ms"].as_f64());
            push(&format!("{build}.img.prepare_after_load_end"), pspan(im, "load_end", "prepare"));
            push(&format!("{build}.img.warmed_after_load_end"), pspan(im, "load_end", "warmed"));
            push(
                &format!("{build}.img.prepared_after_load_end"),
                pspan(im, "load_end", "prepared"),
            );
            push(&format!("{build}.img.command_after_load_end"), pspan(im, "load_end", "command"));
            push(
                &format!("{build}.img.reobserved"),
                Some(f64::from(u8::from(img["answer"]["ok"]["reobserved"].is_number()))),
            );
            push(
                &format!("{build}.reobserved"),
                Some(f64::from(u8::from(ok["reobserved"].is_number()))),
            );
            push(&format!("{build}.prepare_after_load_end"), span("load_end", "prepare"));
            push(&format!("{build}.warmed_after_load_end"), span("load_end", "warmed"));
            push(&format!("{build}.prepared_after_load_end"), span("load_end", "prepared"));
            push(&format!("{build}.img.open_to_observation"), img["total"].as_f64());
            // The task's next page, navigated to in its tab, at `complete`.
            push(&format!("{build}.navigated.complete_to_observation"), nav["observe"].as_f64());
            push(&format!("{build}.navigated.first_page"), nav["first"].as_f64());
            push(&format!("{build}.navigated.navigate"), nav["navigate"].as_f64());
            push(&format!("{build}.navigated.walk"), nav["answer"]["ok"]["elapsed_ms"].as_f64());
            let nm = &nav["marks"];
            push(
                &format!("{build}.navigated.command_after_load_end"),
                pspan(nm, "load_end", "command"),
            );
            push(
                &format!("{build}.navigated.ready_after_load_end"),
                pspan(nm, "load_end", if build == "wasm" { "wasm_ready" } else { "js_ready" }),
            );
            push(&format!("{build}.navigated.cold_walk"), pspan(nm, "observe", "prewalked"));
            push(&format!("{build}.still_not_driven.observation"), plain["observe"].as_f64());
            push(
                &format!("{build}.still_not_driven.walk"),
                plain["answer"]["ok"]["elapsed_ms"].as_f64(),
            );
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
            // The same tab navigated to the next page (the renderer
            // process kept, as for Errand's task tab above), injected and
            // run again once `complete`.
            let next = server.url("/gen-1k-next.html");
            tab.eval(&format!("location.href = {}; 0", json!(next)))?;
            tab.wait_for(
                &format!("location.href === {} && document.readyState === 'complete'", json!(next)),
                Duration::from_secs(60),
            )?;
            let t = Instant::now();
            tab.eval(&format!("window.__bdt = {src}; 0"))?;
            tab.eval(
                "window.__bdt({doHighlightElements: false, focusHighlightIndex: -1, viewportExpansion: -1, debugMode: false}); 0",
            )?;
            let navigated = t.elapsed().as_secs_f64() * 1000.0;
            close(&browser, &tab);
            if counted {
                push("ref.inject", Some(inject));
                push("ref.walk", run.as_f64());
                push("ref.total", Some(total));
                push("ref.navigated.total", Some(navigated));
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
