//! One tokio runtime for the harness's HTTP servers, and starting an axum
//! router on `127.0.0.1:0` in it.

use std::net::SocketAddr;
use std::sync::OnceLock;

use anyhow::{Context, Result};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("e2e-http")
            .enable_all()
            .build()
            .expect("building the harness's tokio runtime")
    })
}

/// A server running in the harness runtime; stopped on drop.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves `router` on a fresh port of 127.0.0.1.
    pub(crate) fn start(router: axum::Router) -> Result<Server> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding a port on 127.0.0.1")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = runtime();
        let listener = {
            let _guard = rt.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let task = rt.spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                eprintln!("e2e server on {addr} stopped: {e}");
            }
        });
        Ok(Server { addr, task })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}
