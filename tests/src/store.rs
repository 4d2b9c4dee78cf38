//! Reading the host's SQLite file, read-only, while the host may still be
//! writing it (WAL mode).
//!
//! Only the columns the suite asserts on are read:
//! `tasks(id, task, status, answer)` and `steps(task_id, step, actions_json, build)`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags};

/// One row of `tasks`.
#[derive(Debug, Clone)]
pub struct TaskRow {
    /// The id as stored (text or integer).
    pub id: SqlValue,
    pub task: String,
    pub status: String,
    pub answer: Option<String>,
}

/// One row of `steps`.
#[derive(Debug, Clone)]
pub struct StepRow {
    pub step: i64,
    pub actions_json: String,
    pub build: Option<String>,
}

/// Opens the file read-only.
pub fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {} read-only", path.display()))?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// Every task, oldest first.
pub fn tasks(path: &Path) -> Result<Vec<TaskRow>> {
    let conn = open(path)?;
    let mut stmt = conn.prepare("SELECT id, task, status, answer FROM tasks ORDER BY rowid")?;
    let rows = stmt
        .query_map([], |r| {
            Ok(TaskRow { id: r.get(0)?, task: r.get(1)?, status: r.get(2)?, answer: r.get(3)? })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()
        .context("reading tasks")?;
    Ok(rows)
}

/// The steps of one task, in order.
pub fn steps(path: &Path, task_id: &SqlValue) -> Result<Vec<StepRow>> {
    let conn = open(path)?;
    let mut stmt = conn.prepare(
        "SELECT step, actions_json, build FROM steps WHERE task_id = ?1 ORDER BY step, rowid",
    )?;
    let rows = stmt
        .query_map([task_id], |r| {
            Ok(StepRow { step: r.get(0)?, actions_json: r.get(1)?, build: r.get(2)? })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()
        .context("reading steps")?;
    Ok(rows)
}
