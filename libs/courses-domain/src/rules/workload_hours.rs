//! [`WorkloadHours`]: a course's workload in whole hours.

use std::fmt;

/// A course's workload in whole hours, from [`WorkloadHours::MIN`] to [`WorkloadHours::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkloadHours(u16);

/// Why a number is not a [`WorkloadHours`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("workload {hours} is outside {min}..={max} hours", min = WorkloadHours::MIN, max = WorkloadHours::MAX)]
pub struct WorkloadHoursError {
    /// The number that was refused.
    pub hours: i64,
}

impl WorkloadHours {
    /// The smallest workload accepted.
    pub const MIN: u16 = 1;
    /// The largest workload accepted.
    pub const MAX: u16 = 1000;

    /// Checks that the number of hours is within the accepted range.
    ///
    /// # Errors
    /// [`WorkloadHoursError`] when `hours` is outside `1..=1000`.
    pub fn parse(hours: i64) -> Result<Self, WorkloadHoursError> {
        u16::try_from(hours)
            .ok()
            .filter(|hours| (Self::MIN..=Self::MAX).contains(hours))
            .map(Self)
            .ok_or(WorkloadHoursError { hours })
    }

    /// The number of hours.
    #[must_use]
    pub fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for WorkloadHours {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, formatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_and_a_thousand_hours_are_accepted() {
        assert_eq!(WorkloadHours::parse(1).map(WorkloadHours::get), Ok(1));
        assert_eq!(WorkloadHours::parse(1000).map(WorkloadHours::get), Ok(1000));
    }

    #[test]
    fn zero_negative_and_more_than_a_thousand_hours_are_refused() {
        for hours in [0, -1, 1001, i64::from(u16::MAX) + 1, i64::MIN, i64::MAX] {
            assert_eq!(WorkloadHours::parse(hours), Err(WorkloadHoursError { hours }), "{hours}");
        }
    }
}
