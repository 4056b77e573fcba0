//! The throughput plot: per-path throughput at the confluence point and per-flow goodput over
//! time, like Figs. 10 and 11 of Motohashi et al.

use mpsched_sim::TimeSeries;
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draw `series` into a PNG at `out`: top panel the `*_mbps` columns of `paths`, bottom panel
/// those of `flows`.
pub fn throughput_png(
    series: &TimeSeries,
    title: &str,
    paths: &[String],
    flows: &[String],
    out: &Path,
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(out, (1100, 760)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(380);
    let t = series.values("time_s").unwrap_or_default();
    let t_max = t.last().copied().unwrap_or(1.0).max(1.0);
    panel(
        &top,
        &format!("{title}: throughput per path (wire, into the confluence point)"),
        &t,
        t_max,
        series,
        paths,
    )?;
    panel(
        &bottom,
        "goodput per flow (UDP payload at the receiver)",
        &t,
        t_max,
        series,
        flows,
    )?;
    root.present()?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    t: &[f64],
    t_max: f64,
    series: &TimeSeries,
    names: &[String],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let lines: Vec<(String, Vec<f64>, Vec<f64>)> = names
        .iter()
        .filter_map(|n| series.values(&format!("{n}_mbps")).map(|v| (n.clone(), t.to_vec(), v)))
        .collect();
    draw_lines(area, caption, "Mbit/s", t_max, &lines, SeriesLabelPosition::LowerRight)
}

/// One chart of named lines (name, times, values) against time, with a legend.
fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    t_max: f64,
    lines: &[(String, Vec<f64>, Vec<f64>)],
    legend_at: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let y_max = lines
        .iter()
        .flat_map(|(_, _, v)| v.iter().copied())
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
    chart.configure_mesh().x_desc("time (s)").y_desc(y_desc).draw()?;
    for (i, (name, t, v)) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                t.iter().copied().zip(v.iter().copied()),
                c.stroke_width(2),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend_at)
        .draw()?;
    Ok(())
}

/// Total goodput of `flows` over time, one line per variant, in MiB/s (as the AFMT paper's
/// Figs. 4 and 5 plot it).
pub fn total_goodput_png(
    title: &str,
    variants: &[(String, &TimeSeries)],
    flows: &[String],
    out: &Path,
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(out, (1100, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut lines = Vec::new();
    let mut t_max: f64 = 1.0;
    for (name, series) in variants {
        let t = series.values("time_s").unwrap_or_default();
        t_max = t_max.max(t.last().copied().unwrap_or(1.0));
        let mut total = vec![0.0; t.len()];
        for f in flows {
            if let Some(v) = series.values(&format!("{f}_mbps")) {
                for (a, b) in total.iter_mut().zip(v) {
                    *a += b * 1e6 / 8.0 / f64::from(1u32 << 20);
                }
            }
        }
        lines.push((name.clone(), t, total));
    }
    draw_lines(
        &root,
        &format!("{title}: total goodput of the tunnelled flows"),
        "MiB/s",
        t_max,
        &lines,
        SeriesLabelPosition::UpperRight,
    )?;
    root.present()?;
    Ok(())
}

/// The comparison as grouped bars: per flow and path, the simulator's and the kernel's rate
/// side by side (a bar each, labelled below).
pub fn compare_png(title: &str, rows: &[crate::compare::CompareRow], out: &Path) -> anyhow::Result<()> {
    let width = (160 + 90 * rows.len() as u32).clamp(700, 4000);
    let root = BitMapBackend::new(out, (width, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = rows
        .iter()
        .map(|r| r.sim_mbps.max(r.netns_mbps))
        .fold(0.0_f64, f64::max)
        .max(1e-6)
        * 1.15;
    let n = rows.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(70)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n, 0.0..top)?;
    let label = |x: &f64| {
        let i = *x as usize;
        rows.get(i)
            .filter(|_| (x.fract() - 0.5).abs() < 1e-9)
            .map(|r| format!("{} {}", r.variant, r.id))
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * rows.len() + 1)
        .x_label_formatter(&label)
        .y_desc("Mbit/s (flows: goodput; paths: wire rate)")
        .draw()?;
    for (k, (name, color)) in [("simulator", COLORS[0]), ("kernel (netns)", COLORS[2])]
        .into_iter()
        .enumerate()
    {
        let bars = rows.iter().enumerate().map(|(i, r)| {
            let v = if k == 0 { r.sim_mbps } else { r.netns_mbps };
            let x0 = i as f64 + 0.1 + 0.4 * k as f64;
            Rectangle::new([(x0, 0.0), (x0 + 0.38, v)], color.filled())
        });
        chart
            .draw_series(bars)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
