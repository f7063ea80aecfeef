import Foundation

/// The report's ratios as an SVG bar chart (`Bench --chart PATH`): one group of bars per workload, one bar per
/// peer, on a logarithmic axis centred on 1.0 (a bar to the right: Strata is better by that factor; to the
/// left: worse), written as plain text with no dependency.
public enum Chart {
    static let colors = ["sqlite": "#4c78a8", "lmdb": "#f58518", "grdb": "#54a24b", "rocksdb": "#b279a2"]
    static let names = ["sqlite": "SQLite", "lmdb": "LMDB", "grdb": "GRDB", "rocksdb": "RocksDB"]

    /// The chart of `report`'s ratios against `peers` (rows with no ratio against any of them are left out).
    public static func svg(_ report: Report, peers: [String]) -> String {
        let rows = report.rows.filter { row in peers.contains { row.ratios[displayName($0)]?.isFinite == true } }
        let barHeight = 9.0, groupGap = 8.0, labelWidth = 330.0, plotWidth = 520.0, top = 58.0
        // The axis spans the ratios shown, at least 1/4 to 4, in whole powers of two.
        let ratios = rows.flatMap { row in peers.compactMap { row.ratios[displayName($0)] } }.filter { $0.isFinite && $0 > 0 }
        let span = max(2.0, (ratios.map { abs(log2($0)) }.max() ?? 2).rounded(.up))
        let x = { (ratio: Double) -> Double in labelWidth + plotWidth / 2 + (log2(ratio) / span) * (plotWidth / 2) }
        var groupTops: [Double] = []
        var y = top
        for row in rows {
            groupTops.append(y)
            y += Double(peers.filter { row.ratios[displayName($0)]?.isFinite == true }.count) * barHeight + groupGap
        }
        let height = y + 30
        let width = labelWidth + plotWidth + 20
        var s = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="11">
            <title>Strata against its peers: Strata's figure over the peer's (greater than 1: Strata is better)</title>
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="18" font-size="13" font-weight="bold">\(escaped("Strata / peer, commit \(report.commit), N = \(report.n), median of \(report.runs) runs"))</text>

            """
        // Legend.
        var legendX = 10.0
        for peer in peers {
            s += "<rect x=\"\(legendX)\" y=\"28\" width=\"10\" height=\"10\" fill=\"\(colors[peer] ?? "#888888")\"/>"
            s += "<text x=\"\(legendX + 14)\" y=\"37\">\(escaped(displayName(peer)))</text>\n"
            legendX += 90
        }
        // Grid: a line per power of two, the one at 1.0 darker.
        for p in stride(from: -Int(span), through: Int(span), by: 1) {
            let gx = x(pow(2, Double(p)))
            let label = p >= 0 ? "\(1 << p)x" : "1/\(1 << -p)"
            let stroke = p == 0 ? "stroke=\"#000000\" stroke-width=\"1.5\"" : "stroke=\"#dddddd\""
            s += "<line x1=\"\(fmt(gx))\" y1=\"\(fmt(top - 6))\" x2=\"\(fmt(gx))\" y2=\"\(fmt(y))\" \(stroke)/>\n"
            // A wide axis is labelled at every other power, so that labels do not run into each other.
            if span <= 5 || p % 2 == 0 {
                s += "<text x=\"\(fmt(gx))\" y=\"\(fmt(y + 14))\" text-anchor=\"middle\">\(escaped(label))</text>\n"
            }
        }
        for (row, groupTop) in zip(rows, groupTops) {
            s += "<text x=\"\(fmt(labelWidth - 8))\" y=\"\(fmt(groupTop + barHeight))\" text-anchor=\"end\">\(escaped(row.workload))</text>\n"
            var barY = groupTop
            for peer in peers {
                guard let ratio = row.ratios[displayName(peer)], ratio.isFinite, ratio > 0 else { continue }
                let clamped = min(max(ratio, pow(2, -span)), pow(2, span))
                let x0 = min(x(1), x(clamped)), x1 = max(x(1), x(clamped))
                s += "<rect class=\"bar\" x=\"\(fmt(x0))\" y=\"\(fmt(barY))\" width=\"\(fmt(max(x1 - x0, 1)))\" height=\"\(fmt(barHeight - 1))\" "
                s += "fill=\"\(colors[peer] ?? "#888888")\"><title>\(escaped("\(row.workload): \(String(format: "%.2f", ratio))x \(displayName(peer))"))</title></rect>\n"
                barY += barHeight
            }
        }
        return s + "</svg>\n"
    }

    /// A peer's name as the report's ratios name it.
    static func displayName(_ peer: String) -> String { names[peer] ?? peer }

    static func fmt(_ v: Double) -> String { String(format: "%.1f", v) }

    static func escaped(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
