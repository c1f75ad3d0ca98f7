//! A bar chart of one shape's results, as a self-contained SVG.

use crate::bench::Row;
use std::fmt::Write as _;

pub fn bars(rows: &[&Row], device: &str) -> String {
    let (w, h, left, top, bottom) = (760.0, 60.0 + 34.0 * rows.len() as f64, 150.0, 40.0, 20.0);
    let max = rows.iter().map(|r| r.tflops).fold(1.0, f64::max) * 1.1;
    let scale = (w - left - 90.0) / max;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    if let Some(r) = rows.first() {
        let _ = writeln!(
            s,
            r#"<text x="{left}" y="24" font-size="15" font-weight="bold">BF16 GEMM {}x{}x{} on {device}, TFLOP/s</text>"#,
            r.shape.0, r.shape.1, r.shape.2
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + 34.0 * i as f64;
        let fill = if r.name == "cuBLAS" { "#7f7f7f" } else { "#2b6cb0" };
        let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, left - 8.0, y + 17.0, r.name);
        let _ = writeln!(s, r#"<rect x="{left}" y="{y}" width="{:.1}" height="24" fill="{fill}"/>"#, r.tflops * scale);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}">{:.0} ({:.2}x)</text>"#,
            left + r.tflops * scale + 6.0,
            y + 17.0,
            r.tflops,
            r.vs_cublas
        );
    }
    let _ = writeln!(s, r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#, h - bottom);
    s.push_str("</svg>\n");
    s
}
