//! Pass/fail criteria a user puts on a run (`--max-loss`): a run that completed but fails
//! one exits with code 1. Pure functions of the record.

use super::labels::flow_label;
use super::RunRecord;

/// What a run must meet.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Criteria {
    /// `--max-loss PERCENT`: the most UDP datagrams (stream tests) or UDP_RR transactions
    /// (rr tests) that may be lost, percent.
    pub max_loss_percent: Option<f64>,
}

impl Criteria {
    /// Whether any criterion was given.
    pub fn is_set(&self) -> bool {
        self.max_loss_percent.is_some()
    }

    /// Every criterion `rec` fails, one sentence each; empty when it passes. A figure the
    /// criterion needs that could not be measured fails it: a run is not passed on a guess.
    pub fn failures(&self, rec: &RunRecord) -> Vec<String> {
        let mut out = Vec::new();
        let Some(max) = self.max_loss_percent else {
            return out;
        };
        if let Some(rr) = &rec.rr {
            match rr.lost_percent {
                Some(l) if l > max => out.push(format!(
                    "{l:.3}% of the transactions were lost, more than --max-loss {max}%"
                )),
                Some(_) => {}
                None => out.push(format!(
                    "lost transactions could not be measured, so --max-loss {max}% cannot pass"
                )),
            }
            return out;
        }
        for f in &rec.summary.flows {
            let dir = flow_label(f.direction);
            match f.loss_percent {
                Some(l) if l > max => out.push(format!(
                    "{dir}: {l:.3}% of the datagrams were lost, more than --max-loss {max}%"
                )),
                Some(_) => {}
                None => out.push(format!(
                    "{dir}: loss could not be measured, so --max-loss {max}% cannot pass"
                )),
            }
        }
        if rec.summary.flows.is_empty() {
            out.push(format!(
                "the record has no flow to measure loss on, so --max-loss {max}% cannot pass"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures;

    #[test]
    fn loss_above_the_limit_fails_and_at_or_below_passes() {
        let mut rec = fixtures::udp_send();
        rec.summary.flows[0].loss_percent = Some(2.5);
        let at = |max| {
            Criteria {
                max_loss_percent: Some(max),
            }
            .failures(&rec)
        };
        assert_eq!(
            at(1.0),
            ["client->server: 2.500% of the datagrams were lost, more than --max-loss 1%"]
        );
        assert!(at(2.5).is_empty());
        assert!(at(10.0).is_empty());
        assert!(Criteria::default().failures(&rec).is_empty());
        assert!(!Criteria::default().is_set());
    }

    #[test]
    fn unmeasured_loss_fails() {
        let mut rec = fixtures::udp_send();
        rec.summary.flows[0].loss_percent = None;
        let f = Criteria {
            max_loss_percent: Some(5.0),
        }
        .failures(&rec);
        assert_eq!(f.len(), 1);
        assert!(f[0].contains("could not be measured"), "{f:?}");
    }

    #[test]
    fn rr_tests_are_judged_on_lost_transactions() {
        let mut rec = fixtures::tcp_rr();
        let c = Criteria {
            max_loss_percent: Some(1.0),
        };
        if let Some(rr) = rec.rr.as_mut() {
            rr.lost_percent = Some(0.5);
        }
        assert!(c.failures(&rec).is_empty());
        if let Some(rr) = rec.rr.as_mut() {
            rr.lost_percent = Some(3.0);
        }
        assert_eq!(
            c.failures(&rec),
            ["3.000% of the transactions were lost, more than --max-loss 1%"]
        );
    }
}
