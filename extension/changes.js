// Errand's note of when the top document last changed, from its start
// (manifest.json: the isolated world, document_start, the top frame). It
// holds no page logic: a MutationObserver that notes the time of the last
// change (`performance.now()`), so that the crate's readiness watch
// (extension/src/ready.rs), which can begin only once the crate is there,
// knows what changed before (otherwise the first observation sits out a
// whole quiet window after the crate came). The crate takes it over when
// it begins watching this document: reads the note, takes the observer's
// pending records, disconnects it. Not taken over, it stops a second after
// `load` (the pages the user visits pay for nothing more); the crate then
// watches as if there were no note. In the isolated world: the page
// cannot see or forge it.
(() => {
  if (globalThis.__errandChanges) return;
  const note = { began: performance.now(), last: -Infinity, observer: null };
  const observer = new MutationObserver(() => {
    note.last = performance.now();
  });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  note.observer = observer;
  globalThis.__errandChanges = note;
  addEventListener('load', () => setTimeout(() => {
    observer.disconnect();
    note.observer = null;
  }, 1000), { once: true });
})();
