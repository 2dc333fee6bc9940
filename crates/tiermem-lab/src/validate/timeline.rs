//! A `timeline.csv` (simulated or recorded) as numbers by column, with empty cells
//! (what a substrate cannot measure) kept apart from zeros.

use super::Error;

/// Rows of one timeline.
#[derive(Clone, Debug)]
pub struct Timeline {
    pub header: Vec<String>,
    pub rows: Vec<Vec<Option<f64>>>,
}

impl Timeline {
    /// Parse CSV text; `origin` names the file in errors (with the line).
    pub fn parse(text: &str, origin: &str) -> Result<Timeline, Error> {
        let mut lines = text.lines().enumerate();
        let header: Vec<String> = match lines.next() {
            Some((_, h)) => h.split(',').map(|s| s.trim().to_string()).collect(),
            None => return Err(Error::input(origin, "empty timeline (no header)")),
        };
        if header.first().map(String::as_str) != Some("time_s") {
            return Err(Error::input(
                origin,
                "line 1: the first column must be time_s",
            ));
        }
        let mut rows = Vec::new();
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let cells: Vec<&str> = line.split(',').collect();
            if cells.len() != header.len() {
                return Err(Error::input(
                    origin,
                    format!(
                        "line {}: {} cells, the header has {}",
                        i + 1,
                        cells.len(),
                        header.len()
                    ),
                ));
            }
            let row = cells
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let c = c.trim();
                    if c.is_empty() {
                        return Ok(None);
                    }
                    c.parse::<f64>().map(Some).map_err(|_| {
                        Error::input(
                            origin,
                            format!("line {}: column {}: not a number: {c:?}", i + 1, header[j]),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if row[0].is_none() {
                return Err(Error::input(
                    origin,
                    format!("line {}: empty time_s", i + 1),
                ));
            }
            rows.push(row);
        }
        if rows.is_empty() {
            return Err(Error::input(origin, "no rows"));
        }
        Ok(Timeline { header, rows })
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// (time, value) of the rows where the column has a value.
    pub fn series(&self, name: &str) -> Option<Vec<(f64, f64)>> {
        let j = self.column(name)?;
        let s: Vec<(f64, f64)> = self
            .rows
            .iter()
            .filter_map(|r| Some((r[0]?, r[j]?)))
            .collect();
        (!s.is_empty()).then_some(s)
    }

    /// Time of the last row.
    pub fn end(&self) -> f64 {
        self.rows.last().and_then(|r| r[0]).unwrap_or(0.0)
    }
}

/// Linear interpolation of a series at `t` (held constant outside it).
pub fn at(s: &[(f64, f64)], t: f64) -> f64 {
    match s.iter().position(|&(x, _)| x >= t) {
        None => s.last().map_or(0.0, |p| p.1),
        Some(0) => s[0].1,
        Some(i) => {
            let (t0, v0) = s[i - 1];
            let (t1, v1) = s[i];
            if t1 - t0 <= 0.0 {
                v1
            } else {
                v0 + (v1 - v0) * (t - t0) / (t1 - t0)
            }
        }
    }
}

/// A cumulative counter's series with its origin `(0, 0)` prepended when the series starts
/// later (the simulator's first row is one sample interval in; counters start at 0).
pub fn with_origin(mut s: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if s.first().is_some_and(|p| p.0 > 0.0) {
        s.insert(0, (0.0, 0.0));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_empty_cells_and_interpolates() {
        let t = Timeline::parse("time_s,a,b\n0,0,\n1,10,5\n2,30,\n", "t.csv").unwrap();
        assert_eq!(t.series("b").unwrap(), vec![(1.0, 5.0)]);
        let a = t.series("a").unwrap();
        assert_eq!(at(&a, 1.5), 20.0);
        assert_eq!(at(&a, 9.0), 30.0);
        let e = Timeline::parse("time_s,a\n0,x\n", "k.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("k.csv") && e.contains("line 2") && e.contains("column a"),
            "{e}"
        );
        assert!(Timeline::parse("a,b\n", "k.csv").is_err());
    }
}
