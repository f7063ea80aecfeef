import BenchKit
import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Counts the bars of a chart while checking that it parses as XML.
private final class BarCounter: NSObject, XMLParserDelegate {
    var bars = 0
    var root: String?
    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        if root == nil { root = name }
        if name == "rect" && attributes["class"] == "bar" { bars += 1 }
    }
}

/// `Bench --chart`: a well-formed SVG with one bar per ratio (a group per workload, a bar per peer).
@Suite struct ChartTests {
    @Test func aChartIsWellFormedSVGWithOneBarPerRatio() throws {
        func row(_ workload: String, _ ratios: [String: Double]) -> Row {
            Row(workload: workload, unit: .perSecond, results: [:], ratios: ratios, note: nil)
        }
        let report = Report(
            machine: "test", cores: 2, toolchain: "swift", commit: "abc <&>", n: 100, runs: 3, durability: "full",
            rows: [
                row("insert", ["SQLite": 0.46, "LMDB": 1.9]),
                row("enumerate & \"scan\"", ["SQLite": 0.66, "LMDB": 0.3, "GRDB": 12.5]),
                row("no peer ran", [:]),
                row("lookup", ["SQLite": 40.0]),
            ], checks: [:])
        let svg = Chart.svg(report, peers: ["sqlite", "lmdb", "grdb"])
        let counter = BarCounter()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = counter
        #expect(parser.parse(), "not well-formed: \(String(describing: parser.parserError))")
        #expect(counter.root == "svg")
        #expect(counter.bars == 6)
        // The workload without a ratio has no group; the others are labelled, escaped.
        #expect(!svg.contains("no peer ran"))
        #expect(svg.contains("enumerate &amp; &quot;scan&quot;"))
        // The axis reaches the largest ratio (40x: 2^6).
        #expect(svg.contains(">64x<"))
    }
}
