// The self-check image: each build goes wrong in one way (fw_fault_mode, set
// at build time), and firmware/selfcheck.sh checks that the run fails the way
// a broken test image would: a Swift trap, running out of heap, a hang, a
// failed check. A harness that let any of these pass would be worthless.
@_extern(c, "fw_fault_mode") func fwFaultMode() -> Int32
@_extern(c, "fw_exit") func fwExit(_ status: Int32)

@inline(never)
func element(_ values: [Int], _ index: Int) -> Int { values[index] }

@_cdecl("firmware_main")
public func firmwareMain() {
    let mode = fwFaultMode()
    print("self-check image, fault \(mode)")
    switch mode {
    case 1:
        // A Swift trap: array index out of range.
        let values = [1, 2, 3]
        print("value \(element(values, Int(mode) + 9))")
    case 2:
        // Runs out of heap: keeps every block.
        var blocks: [[UInt8]] = []
        while true { blocks.append([UInt8](repeating: UInt8(truncatingIfNeeded: blocks.count), count: 1024)) }
    case 3:
        // Hangs.
        var spins: UInt32 = 0
        while mode == 3 { spins &+= 1 }
        print("spun \(spins)")
    default:
        // A failed check: the image reports it and exits with status 1.
        print("  FAIL a check that does not hold")
        print("FAIL")
        fwExit(1)
    }
}
