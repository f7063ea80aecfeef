// A program with a few thousand types (Types.swift, from generate.py), of which a few hundred are models:
// prints how long model discovery takes the first time (what an open without `objectTypes` pays once per
// process) and what it found. Run by ModelDiscoveryCostTests; `swift run -c release DiscoveryCostChild`
// gives the figure of a release build.
//
// Output: "types T models M expected E discovery-ms D schema-ms S"

import Dispatch
import Foundation
import Strata

func milliseconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

// The types exist, as in an app that uses them (nothing here must depend on it).
_ = (Service0(), View0(), Value0(), Choice0.a, Box0(1), IntBox0(), Screen0(), Record0())

var found = 0
let discovery = milliseconds { found = ModelDiscovery.modelClasses.count }
var kept = 0
let schema = milliseconds { kept = ModelDiscovery.schemaClasses.count }
let ours = ModelDiscovery.modelClasses.filter { String(reflecting: $0).hasPrefix("DiscoveryCostChild.") }.count
print("types \(typeCount) models \(ours) of \(found) schema \(kept) expected \(expectedModelCount) "
    + String(format: "discovery-ms %.2f schema-ms %.2f", discovery, schema))
