import StrataTool

// The `strata` command: inspect, check, compact and migrate Strata databases. Without the app's models it
// cannot run an app's transformObjects closures; `StrataTool.main(configurations:)` builds one that can.
StrataTool.main()
