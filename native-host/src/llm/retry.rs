//! Retries with backoff: after HTTP 429 or 5xx the call is tried again,
//! after the server's `Retry-After` when it gave one, else after a delay
//! that doubles each time. A stop cancels the wait at once.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{BoxFuture, ChatMessage, Completion, Expect, LlmError, Provider};
use crate::config::Settings;

/// The longest backoff delay without a `Retry-After`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A `Retry-After` longer than this is not waited for: the error is
/// returned at once.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    pub max_retries: u32,
    pub base: Duration,
}

impl Policy {
    pub fn from_settings(settings: &Settings) -> Policy {
        Policy { max_retries: settings.max_retries, base: settings.retry_base }
    }

    /// The wait before retry number `retry` (0-based) after `error`, or
    /// `None` when it should not be retried.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        if retry >= self.max_retries || !error.is_retryable() {
            return None;
        }
        match error.retry_after() {
            Some(d) if d > MAX_RETRY_AFTER => None,
            Some(d) => Some(d),
            None => Some(self.base.saturating_mul(2u32.saturating_pow(retry)).min(MAX_BACKOFF)),
        }
    }
}

/// A provider whose calls are retried.
pub struct Retrying {
    inner: Arc<dyn Provider>,
    policy: Policy,
}

impl Retrying {
    pub fn new(inner: Arc<dyn Provider>, policy: Policy) -> Retrying {
        Retrying { inner, policy }
    }
}

impl Provider for Retrying {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        self.complete_as(messages, Expect::Text, cancel)
    }

    fn complete_as<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        expect: Expect,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let mut retry = 0;
            loop {
                let error = match self.inner.complete_as(messages, expect, cancel).await {
                    Ok(c) => return Ok(c),
                    Err(e) => e,
                };
                let Some(wait) = self.policy.delay(retry, &error) else {
                    return Err(if retry > 0 {
                        LlmError::GaveUp { attempts: retry + 1, last: Box::new(error) }
                    } else {
                        error
                    });
                };
                tracing::warn!(
                    retry = retry + 1,
                    wait_ms = wait.as_millis() as u64,
                    "model call failed, retrying: {error}"
                );
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                    _ = tokio::time::sleep(wait) => {}
                }
                retry += 1;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Fails with the given errors, then answers.
    struct Flaky {
        errors: Mutex<Vec<LlmError>>,
        calls: Mutex<u32>,
    }

    impl Provider for Flaky {
        fn model(&self) -> &str {
            "flaky"
        }
        fn complete<'a>(
            &'a self,
            _: &'a [ChatMessage],
            _: &'a CancellationToken,
        ) -> BoxFuture<'a, Result<Completion, LlmError>> {
            Box::pin(async move {
                *self.calls.lock().unwrap() += 1;
                match self.errors.lock().unwrap().pop() {
                    Some(e) => Err(e),
                    None => Ok(Completion { text: "ok".into(), usage: None }),
                }
            })
        }
    }

    fn limited(after: Option<u64>) -> LlmError {
        LlmError::RateLimited {
            excerpt: "slow down".into(),
            retry_after: after.map(Duration::from_millis),
        }
    }

    #[test]
    fn delays_double_and_honour_retry_after() {
        let p = Policy { max_retries: 3, base: Duration::from_millis(100) };
        let server = LlmError::Server { status: 503, excerpt: String::new(), retry_after: None };
        assert_eq!(p.delay(0, &server), Some(Duration::from_millis(100)));
        assert_eq!(p.delay(2, &server), Some(Duration::from_millis(400)));
        assert_eq!(p.delay(3, &server), None);
        assert_eq!(p.delay(0, &limited(Some(1500))), Some(Duration::from_millis(1500)));
        assert_eq!(p.delay(0, &limited(Some(1_000_000))), None);
        let key = LlmError::BadKey { status: 401, excerpt: String::new() };
        assert_eq!(p.delay(0, &key), None);
    }

    #[tokio::test]
    async fn retries_then_answers_or_gives_up() {
        let flaky = Arc::new(Flaky {
            errors: Mutex::new(vec![limited(Some(20)), limited(None)]),
            calls: Mutex::new(0),
        });
        let p = Retrying::new(
            flaky.clone(),
            Policy { max_retries: 3, base: Duration::from_millis(10) },
        );
        let c = p.complete(&[], &CancellationToken::new()).await.unwrap();
        assert_eq!(c.text, "ok");
        assert_eq!(*flaky.calls.lock().unwrap(), 3);

        let flaky = Arc::new(Flaky {
            errors: Mutex::new(vec![limited(None), limited(None), limited(None)]),
            calls: Mutex::new(0),
        });
        let p =
            Retrying::new(flaky.clone(), Policy { max_retries: 2, base: Duration::from_millis(1) });
        let e = p.complete(&[], &CancellationToken::new()).await.unwrap_err();
        assert!(e.to_string().contains("gave up after 3 attempts"), "{e}");
        assert!(!e.is_fatal());
    }

    #[tokio::test]
    async fn a_stop_cancels_the_wait() {
        let flaky = Arc::new(Flaky {
            errors: Mutex::new(vec![limited(Some(60_000))]),
            calls: Mutex::new(0),
        });
        let p = Retrying::new(flaky, Policy { max_retries: 3, base: Duration::from_millis(1) });
        let token = CancellationToken::new();
        let t2 = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            t2.cancel();
        });
        let started = std::time::Instant::now();
        let e = p.complete(&[], &token).await.unwrap_err();
        assert!(matches!(e, LlmError::Cancelled), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn reads_retry_after() {
        use std::time::{SystemTime, UNIX_EPOCH};
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        assert_eq!(super::super::parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            super::super::parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            super::super::parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(super::super::parse_retry_after("soon", now), None);
        let _ = SystemTime::now();
    }
}
