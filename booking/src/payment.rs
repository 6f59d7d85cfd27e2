//! The payment step: a trait the confirm calls outside any database
//! transaction, and the simulated provider (latency and failure rate are
//! settings, the token `tok_decline` is declined). Nothing here touches the
//! database; recording attempts is the confirm's job.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;

/// The payment token the simulation always declines.
pub const DECLINED_TOKEN: &str = "tok_decline";

/// Why a charge did not go through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaymentError {
    /// The provider refused the payment (card declined).
    #[error("declined")]
    Declined,
    /// The provider failed; nothing was charged.
    #[error("payment provider failed: {0}")]
    Failed(String),
}

/// A payment provider. `attempt_id` is unique per attempt and is the
/// provider's idempotency key: charging it twice charges once, and a refund
/// names the attempt (so an attempt whose answer was lost can be voided).
#[async_trait]
pub trait Payment: Send + Sync {
    /// Charges `amount` (minor units) to `token`; returns the provider's
    /// reference for the charge.
    async fn charge(
        &self,
        attempt_id: &str,
        token: &str,
        amount: u64,
    ) -> Result<String, PaymentError>;

    /// Refunds (or voids) the attempt, whatever became of it.
    async fn refund(&self, attempt_id: &str, amount: u64) -> Result<(), PaymentError>;

    /// The simulated provider, whose latency the operator may change while
    /// the origin runs (`PUT /admin/payment`, to rehearse a provider that
    /// slows down mid-sale); `None` for a real provider.
    fn simulation(&self) -> Option<&SimulatedPayment> {
        None
    }
}

/// A stand-in provider: waits `latency`, declines `tok_decline`, and fails
/// a `failure_rate` share of the other charges.
#[derive(Debug)]
pub struct SimulatedPayment {
    /// In milliseconds; an atomic so the operator can change it while
    /// charges run ([`SimulatedPayment::set_latency`]).
    latency_ms: AtomicU64,
    failure_rate: f64,
    /// Whether the operator's knob may change the latency (`--payment-knob`).
    adjustable: bool,
}

/// The most latency the simulation takes (the `--payment-latency-ms` range).
pub const MAX_SIMULATED_LATENCY: Duration = Duration::from_secs(60);

impl SimulatedPayment {
    /// A provider answering after `latency`, failing `failure_rate` (0 to 1)
    /// of the charges.
    pub fn new(latency: Duration, failure_rate: f64) -> SimulatedPayment {
        SimulatedPayment {
            latency_ms: AtomicU64::new(latency.min(MAX_SIMULATED_LATENCY).as_millis() as u64),
            failure_rate: failure_rate.clamp(0.0, 1.0),
            adjustable: false,
        }
    }

    /// Offers the latency to the operator's knob ([`Payment::simulation`]).
    pub fn adjustable(mut self) -> SimulatedPayment {
        self.adjustable = true;
        self
    }

    /// How long a charge or refund takes now.
    pub fn latency(&self) -> Duration {
        Duration::from_millis(self.latency_ms.load(Ordering::Relaxed))
    }

    /// Changes the latency of the charges and refunds that start from now
    /// (at most [`MAX_SIMULATED_LATENCY`]).
    pub fn set_latency(&self, latency: Duration) {
        let ms = latency.min(MAX_SIMULATED_LATENCY).as_millis() as u64;
        self.latency_ms.store(ms, Ordering::Relaxed);
    }

    async fn wait(&self) {
        let latency = self.latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }
}

#[async_trait]
impl Payment for SimulatedPayment {
    async fn charge(
        &self,
        attempt_id: &str,
        token: &str,
        _amount: u64,
    ) -> Result<String, PaymentError> {
        self.wait().await;
        if token == DECLINED_TOKEN {
            return Err(PaymentError::Declined);
        }
        if self.failure_rate > 0.0 && rand::random::<f64>() < self.failure_rate {
            return Err(PaymentError::Failed("simulated failure".into()));
        }
        Ok(format!("sim_{attempt_id}"))
    }

    async fn refund(&self, _attempt_id: &str, _amount: u64) -> Result<(), PaymentError> {
        self.wait().await;
        Ok(())
    }

    fn simulation(&self) -> Option<&SimulatedPayment> {
        self.adjustable.then_some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn simulation() {
        let pay = SimulatedPayment::new(Duration::ZERO, 0.0);
        assert!(pay.simulation().is_none(), "no knob unless asked for");
        let pay = pay.adjustable();
        assert!(pay.charge("a", "tok_ok", 1).await.is_ok());
        assert_eq!(
            pay.charge("a", DECLINED_TOKEN, 1).await,
            Err(PaymentError::Declined)
        );
        assert_eq!(pay.simulation().map(|p| p.latency()), Some(Duration::ZERO));
        pay.set_latency(Duration::from_millis(30));
        let started = std::time::Instant::now();
        assert!(pay.charge("b", "tok_ok", 1).await.is_ok());
        assert!(started.elapsed() >= Duration::from_millis(30));
        pay.set_latency(Duration::from_secs(3600));
        assert_eq!(pay.latency(), MAX_SIMULATED_LATENCY);
        let failing = SimulatedPayment::new(Duration::ZERO, 1.0);
        assert!(matches!(
            failing.charge("a", "tok_ok", 1).await,
            Err(PaymentError::Failed(_))
        ));
    }
}
