//! Plain-text tables for the terminal (`persona runs`, a suite's last table): columns padded
//! to their widest cell, counted in characters.

/// The rows as lines, each cell padded to its column's width, trailing spaces trimmed. `last`
/// is appended to each line unpadded (a long path that would widen the table for nothing).
pub fn aligned<const N: usize>(rows: &[[String; N]], last: Option<&[String]>) -> Vec<String> {
    let mut widths = [0usize; N];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let mut line = String::new();
            for (c, w) in r.iter().zip(widths.iter()) {
                line.push_str(&format!("{c:<w$}  "));
            }
            if let Some(tail) = last.and_then(|l| l.get(i)) {
                line.push_str(tail);
            }
            line.trim_end().to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = [
            ["FLOW".to_owned(), "OUTCOME".to_owned()],
            ["checkout".to_owned(), "clean".to_owned()],
        ];
        assert_eq!(
            super::aligned(&rows, None),
            ["FLOW      OUTCOME", "checkout  clean"]
        );
        let dirs = ["DIR".to_owned(), "runs/r1".to_owned()];
        assert_eq!(
            super::aligned(&rows, Some(&dirs))[1],
            "checkout  clean    runs/r1"
        );
    }
}
