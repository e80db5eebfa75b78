enum BenchCommand { static func run(_ a: [String]) -> Int32 { 2 } }
