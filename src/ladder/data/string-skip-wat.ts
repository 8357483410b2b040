/**
 * The string-body skipper of the JSONL scanner as WebAssembly text: 16 bytes per step with SIMD
 * (a quote, a backslash or a byte below 0x20 ends a run), valid escapes skipped in place, so
 * the scanner is called back only where a string ends or breaks the grammar. `npm run build`
 * assembles it into dist/generated/ (scripts/precompile.mjs); string-skip.ts loads it.
 */
export const STRING_SKIP_WAT = String.raw`(module
  (memory (export "memory") 1)
  (func $isHex (param $c i32) (result i32)
    (i32.or
      (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10))
      (i32.lt_u (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x61)) (i32.const 6))))
  (func $escapable (param $e i32) (result i32)
    (i32.or
      (i32.or
        (i32.or (i32.eq (local.get $e) (i32.const 0x22)) (i32.eq (local.get $e) (i32.const 0x5c)))
        (i32.or (i32.eq (local.get $e) (i32.const 0x2f)) (i32.eq (local.get $e) (i32.const 0x6e))))
      (i32.or
        (i32.or (i32.eq (local.get $e) (i32.const 0x62)) (i32.eq (local.get $e) (i32.const 0x66)))
        (i32.or (i32.eq (local.get $e) (i32.const 0x72)) (i32.eq (local.get $e) (i32.const 0x74))))))
  ;; Index of the first byte in [i, end) that ends plain string content and does not start a
  ;; complete valid escape (a quote, a byte below 0x20, a backslash of an invalid or cut escape),
  ;; or end.
  (func (export "skipStringBody") (param $i i32) (param $end i32) (result i32)
    (local $v v128) (local $m i32) (local $c i32)
    (block $done
      (loop $scan
        (if (i32.le_u (i32.add (local.get $i) (i32.const 16)) (local.get $end))
          (then
            (local.set $v (v128.load (local.get $i)))
            (local.set $m (i8x16.bitmask (v128.or
              (v128.or
                (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x22)))
                (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x5c))))
              (i8x16.lt_u (local.get $v) (i8x16.splat (i32.const 0x20))))))
            (if (i32.eqz (local.get $m))
              (then
                (local.set $i (i32.add (local.get $i) (i32.const 16)))
                (br $scan)))
            (local.set $i (i32.add (local.get $i) (i32.ctz (local.get $m)))))
          (else
            (block $stop
              (loop $bytes
                (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
                (local.set $c (i32.load8_u (local.get $i)))
                (br_if $stop (i32.or
                  (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
                  (i32.lt_u (local.get $c) (i32.const 0x20))))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $bytes)))))
        ;; a stop byte at i: only a complete valid escape is skipped
        (br_if $done (i32.ne (i32.load8_u (local.get $i)) (i32.const 0x5c)))
        (br_if $done (i32.ge_u (i32.add (local.get $i) (i32.const 1)) (local.get $end)))
        (local.set $c (i32.load8_u offset=1 (local.get $i)))
        (if (i32.eq (local.get $c) (i32.const 0x75))
          (then
            (br_if $done (i32.ge_u (i32.add (local.get $i) (i32.const 5)) (local.get $end)))
            (br_if $done (i32.eqz (i32.and
              (i32.and (call $isHex (i32.load8_u offset=2 (local.get $i))) (call $isHex (i32.load8_u offset=3 (local.get $i))))
              (i32.and (call $isHex (i32.load8_u offset=4 (local.get $i))) (call $isHex (i32.load8_u offset=5 (local.get $i)))))))
            (local.set $i (i32.add (local.get $i) (i32.const 6))))
          (else
            (br_if $done (i32.eqz (call $escapable (local.get $c))))
            (local.set $i (i32.add (local.get $i) (i32.const 2)))))
        (br $scan)))
    (local.get $i)))
`
