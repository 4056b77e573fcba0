//! Time series sampled at a fixed interval (one second by default, as bwm-ng samples).

use std::io::Write;

/// A table of samples: one row per interval, named columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeSeries {
    /// Column names; the first is `time_s` (the end of the interval).
    pub columns: Vec<String>,
    /// Rows of values, one per column.
    pub rows: Vec<Vec<f64>>,
}

impl TimeSeries {
    /// Index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// All values of column `name`.
    pub fn values(&self, name: &str) -> Option<Vec<f64>> {
        let i = self.column(name)?;
        Some(self.rows.iter().map(|r| r[i]).collect())
    }

    /// Write as CSV (values with up to 4 decimals, so equal runs give equal bytes).
    pub fn write_csv(&self, mut w: impl Write) -> std::io::Result<()> {
        writeln!(w, "{}", self.columns.join(","))?;
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|v| fmt_cell(*v)).collect();
            writeln!(w, "{}", cells.join(","))?;
        }
        Ok(())
    }
}

fn fmt_cell(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_have_at_most_four_decimals_and_no_negative_zero() {
        let ts = TimeSeries {
            columns: vec!["time_s".into(), "x".into()],
            rows: vec![vec![1.0, 0.123456], vec![2.0, -0.00001]],
        };
        let mut out = Vec::new();
        ts.write_csv(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "time_s,x\n1,0.1235\n2,0\n");
        assert_eq!(ts.values("x"), Some(vec![0.123456, -0.00001]));
        assert_eq!(ts.column("y"), None);
    }
}
