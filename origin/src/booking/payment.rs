//! The payment step: a trait the confirm calls outside any database
//! transaction, and the simulated provider (latency and failure rate are
//! settings, the token `tok_decline` is declined). Nothing here touches the
//! database; recording attempts is the confirm's job.

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
}

/// A stand-in provider: waits `latency`, declines `tok_decline`, and fails
/// a `failure_rate` share of the other charges.
#[derive(Clone, Debug)]
pub struct SimulatedPayment {
    latency: Duration,
    failure_rate: f64,
}

impl SimulatedPayment {
    /// A provider answering after `latency`, failing `failure_rate` (0 to 1)
    /// of the charges.
    pub fn new(latency: Duration, failure_rate: f64) -> SimulatedPayment {
        SimulatedPayment {
            latency,
            failure_rate: failure_rate.clamp(0.0, 1.0),
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
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        if token == DECLINED_TOKEN {
            return Err(PaymentError::Declined);
        }
        if self.failure_rate > 0.0 && rand::random::<f64>() < self.failure_rate {
            return Err(PaymentError::Failed("simulated failure".into()));
        }
        Ok(format!("sim_{attempt_id}"))
    }

    async fn refund(&self, _attempt_id: &str, _amount: u64) -> Result<(), PaymentError> {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn simulation() {
        let pay = SimulatedPayment::new(Duration::ZERO, 0.0);
        assert!(pay.charge("a", "tok_ok", 1).await.is_ok());
        assert_eq!(
            pay.charge("a", DECLINED_TOKEN, 1).await,
            Err(PaymentError::Declined)
        );
        let failing = SimulatedPayment::new(Duration::ZERO, 1.0);
        assert!(matches!(
            failing.charge("a", "tok_ok", 1).await,
            Err(PaymentError::Failed(_))
        ));
    }
}
