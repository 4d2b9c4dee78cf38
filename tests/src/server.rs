//! The harness's HTTP servers run as the scripted model does: one tokio
//! runtime, an axum router on `127.0.0.1:0` (`errand_scripted_model::Server`).

pub(crate) use errand_scripted_model::Server;
