//! What changed since the last observation: the `MutationObserver` on the
//! document, every open shadow root and same-origin frame walked, and the
//! `input`/`change`/`scroll` listeners, gathered into [`Changes`].

use super::*;

pub(super) fn options() -> MutationObserverInit {
    let init = MutationObserverInit::new();
    init.set_subtree(true);
    init.set_child_list(true);
    init.set_attributes(true);
    init.set_character_data(true);
    init
}

/// Records one batch of mutations.
pub(super) fn record(records: js_sys::Array) {
    CHANGES.with(|c| {
        let mut c = c.borrow_mut();
        for r in records.iter() {
            let r: MutationRecord = r.unchecked_into();
            let Some(target) = r.target() else { continue };
            let in_head = proto::node_name(&target).eq_ignore_ascii_case("head")
                || proto::parent_element(&target).is_some_and(|p| proto::local_name(&p) == "head");
            let title = proto::node_name(&target).eq_ignore_ascii_case("title")
                || proto::parent_element(&target).is_some_and(|p| proto::local_name(&p) == "title");
            // A frame's styles are read afresh each time its content is walked.
            if in_head && !title && !in_frame(&target) {
                c.styling = true;
            }
            let (added, removed) = (r.added_nodes(), r.removed_nodes());
            if c.dirty.len() + (added.length() + removed.length()) as usize > MAX_CHANGES {
                c.too_many = true;
            }
            if c.too_many {
                continue;
            }
            for i in 0..added.length() {
                c.added.extend(added.item(i));
            }
            for i in 0..removed.length() {
                c.removed.extend(removed.item(i));
            }
            if r.type_() == "attributes" {
                let name = r.attribute_name();
                if matches!(name.as_deref(), Some("aria-hidden" | "inert"))
                    && !c.hiding.contains(&target)
                {
                    c.hiding.push(target.clone());
                }
            } else if !c.content.contains(&target) {
                c.content.push(target.clone());
            }
            if !c.dirty.contains(&target) {
                c.dirty.push(target);
            }
        }
    });
}

/// A node of this window or of a same-origin frame's (whose objects are
/// no `instanceof` this window's classes).
pub(super) fn as_node(v: impl Into<JsValue>) -> Option<Node> {
    let v: JsValue = v.into();
    js_sys::Reflect::get(&v, &JsValue::from_str("nodeType"))
        .ok()
        .and_then(|t| t.as_f64())
        .map(|_| v.unchecked_into())
}

/// Whether `node` is in a document other than the watched one (a frame's).
pub(super) fn in_frame(node: &Node) -> bool {
    let watched = WATCHER.with(|w| w.borrow().as_ref().map(|w| w.document.clone()));
    proto::owner_document(&node).is_some_and(|d| watched.is_some_and(|w| w != d))
}

/// Events after which something changed without a mutation: a scroll, a
/// field the person (or an action) typed in or changed, and a CSS
/// transition or animation that ended (what it faded in or out, moved or
/// unfolded shows now as it will stay).
pub(super) const EVENTS: [&str; 6] =
    ["scroll", "input", "change", "transitionend", "animationend", "transitioncancel"];

/// Records one of [`EVENTS`].
pub(super) fn on_event(e: Event) {
    let kind = e.type_();
    if kind == "scroll" {
        CHANGES.with(|c| c.borrow_mut().scrolled = true);
        return;
    }
    let Some(t) = e.target().and_then(as_node) else { return };
    if kind != "input" && kind != "change" {
        // Its computed style (and its descendants') is to be read again.
        crate::observe::style_cache::mark(&t);
    }
    changed(t);
}

/// Records `node` as changed without a mutation.
pub(super) fn changed(t: Node) {
    CHANGES.with(|c| {
        let mut c = c.borrow_mut();
        if c.dirty.len() >= MAX_CHANGES {
            c.too_many = true;
        } else if !c.dirty.contains(&t) {
            c.dirty.push(t);
        }
    });
}

/// Records elements that were found to have listeners since the last
/// observation (`listeners.rs`): they may be listed now.
pub(crate) fn listeners_found(nodes: Vec<Node>) {
    for n in nodes {
        changed(n);
    }
}

/// Sets the watcher up for `document` (once), and takes what it saw since
/// the last observation.
pub fn take_changes(document: &Document) -> Changes {
    let fresh = WATCHER.with(|w| w.borrow().as_ref().is_none_or(|w| w.document != *document));
    if fresh {
        start(document);
        // Nothing is known about what happened before.
        CHANGES.with(|c| *c.borrow_mut() = Changes { unknown: true, ..Changes::default() });
    }
    let pending = WATCHER.with(|w| w.borrow().as_ref().map(|w| w.observer.take_records()));
    if let Some(p) = pending {
        record(p);
    }
    CHANGES.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

pub(super) fn start(document: &Document) {
    WATCHER.with(|w| {
        if let Some(old) = w.borrow_mut().take() {
            old.observer.disconnect();
        }
    });
    let on_records = Closure::<dyn FnMut(js_sys::Array)>::new(record);
    let Ok(observer) = MutationObserver::new(on_records.as_ref().unchecked_ref()) else {
        return;
    };
    let Some(root) = proto::document_element(&document) else {
        return;
    };
    if observer.observe_with_options(&root, &options()).is_err() {
        return;
    }
    let on_event = Closure::<dyn FnMut(Event)>::new(on_event);
    if let Some(window) = proto::default_view(&document) {
        let f = on_event.as_ref().unchecked_ref();
        for kind in EVENTS {
            let _ = window.add_event_listener_with_callback_and_bool(kind, f, true);
        }
    }
    WATCHER.with(|w| {
        *w.borrow_mut() = Some(Watcher {
            document: document.clone(),
            observer,
            _on_records: on_records,
            _on_event: on_event,
            shadows: Vec::new(),
            frames: Vec::new(),
        })
    });
}

/// Ends an observation: Errand's own writes since it started (the marks)
/// are not the page's changes.
pub fn end() {
    WATCHER.with(|w| {
        if let Some(w) = w.borrow().as_ref() {
            let _ = w.observer.take_records();
        }
    });
    CHANGES.with(|c| *c.borrow_mut() = Changes::default());
}

/// Watches the shadow roots and frames a walk went into.
pub(super) fn watch(shadows: &[web_sys::ShadowRoot], frames: &[FrameSeen]) {
    crate::ready::watch_shadows(shadows);
    WATCHER.with(|w| {
        let mut w = w.borrow_mut();
        let Some(w) = w.as_mut() else { return };
        for s in shadows {
            if !w.shadows.contains(s) {
                let _ = w.observer.observe_with_options(s, &options());
                w.shadows.push(s.clone());
            }
        }
        for f in frames {
            if w.frames.contains(&f.document) {
                continue;
            }
            // The document itself: a frame's document is often rewritten
            // whole (`document.open()`, an ad's), its root replaced.
            let _ = w.observer.observe_with_options(&f.document, &options());
            if let Some(window) = proto::default_view(&f.document) {
                let on_event = w._on_event.as_ref().unchecked_ref();
                for kind in EVENTS {
                    let _ = window.add_event_listener_with_callback_and_bool(kind, on_event, true);
                }
            }
            w.frames.push(f.document.clone());
        }
    });
}
