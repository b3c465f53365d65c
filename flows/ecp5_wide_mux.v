// Techmap for hw.synth_fpga: the 4- and 8-to-1 multiplexers that Yosys'
// `muxcover -mux4 -mux8` finds in a mux tree, built the way an ECP5 slice
// builds them: two LUT4s (each a 2-to-1 mux, INIT 16'hCACA: Z = C ? B : A)
// joined by the slice's PFUMX, and two slices joined by an L6MUX21. A generic
// LUT mapper (ABC, ABC9) sees a 4-to-1 multiplexer as a six-input function and
// spends four LUT4s on it (or three in two levels); this is two LUT4s and one
// LUT level.
module \$_MUX4_ (A, B, C, D, S, T, Y);
    input A, B, C, D, S, T;
    output Y;
    wire f0, f1;
    LUT4 #(.INIT(16'hCACA)) l0 (.A(A), .B(B), .C(S), .D(1'b0), .Z(f0));
    LUT4 #(.INIT(16'hCACA)) l1 (.A(C), .B(D), .C(S), .D(1'b0), .Z(f1));
    PFUMX m (.ALUT(f1), .BLUT(f0), .C0(T), .Z(Y));
endmodule

module \$_MUX8_ (A, B, C, D, E, F, G, H, S, T, U, Y);
    input A, B, C, D, E, F, G, H, S, T, U;
    output Y;
    wire f0, f1, f2, f3, g0, g1;
    LUT4 #(.INIT(16'hCACA)) l0 (.A(A), .B(B), .C(S), .D(1'b0), .Z(f0));
    LUT4 #(.INIT(16'hCACA)) l1 (.A(C), .B(D), .C(S), .D(1'b0), .Z(f1));
    LUT4 #(.INIT(16'hCACA)) l2 (.A(E), .B(F), .C(S), .D(1'b0), .Z(f2));
    LUT4 #(.INIT(16'hCACA)) l3 (.A(G), .B(H), .C(S), .D(1'b0), .Z(f3));
    PFUMX m0 (.ALUT(f1), .BLUT(f0), .C0(T), .Z(g0));
    PFUMX m1 (.ALUT(f3), .BLUT(f2), .C0(T), .Z(g1));
    L6MUX21 m2 (.D0(g0), .D1(g1), .SD(U), .Z(Y));
endmodule
