// Ready-made tasks, shared by the panel and the service worker (the
// right-click menu). No page logic: just the words the model is given.

/** "Fill this form for me" and the right-click menu item. */
export const FILL_TASK =
  'Fill in the form on this page with my details from my profile; do not submit it.';

/** The `chrome.storage.session` key of a task waiting for the panel to start it. */
export const PENDING_KEY = 'errand.pendingTask';

/** The right-click menu item's id. */
export const MENU_FILL = 'errand-fill-form';
