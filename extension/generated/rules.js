// Generated from Rust (errand-protocol, shared/src/rules_js.rs): do not edit.
// Regenerate with `cargo run -p errand-protocol --example export-js`;
// `cargo test -p errand-protocol rules_js` fails when this file is stale.

/** The kinds a side panel may send; the service worker drops any other. */
export const PANEL_KINDS = new Set([
  "start_task",
  "stop_task",
  "get_status",
  "answer",
  "follow_up",
  "pause_task",
  "resume_task",
  "approve",
  "list_tasks",
  "get_task",
  "get_settings",
  "save_settings",
  "test_connection",
  "get_profile",
  "set_fact",
  "set_secret",
  "forget",
  "ping",
  "save_recipe",
  "list_recipes",
  "run_recipe",
  "accept_repairs",
  "list_grants",
  "revoke_grant",
  "hand_tab",
]);

/** The extension stores Errand never touches: host, and path prefix (lower case). */
export const STORE_PAGES = [
  { host: "chromewebstore.google.com", path: "" },
  { host: "chrome.google.com", path: "/webstore" },
  { host: "microsoftedge.microsoft.com", path: "/addons" },
];

/** How long an incomplete set of chunks is kept. */
export const CHUNK_TIMEOUT_MS = 30000;
