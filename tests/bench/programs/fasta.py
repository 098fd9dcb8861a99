# fasta (Benchmarks Game): writes three DNA sequences in FASTA format: a
# repeat of the ALU sequence, then two random sequences drawn from
# cumulative probability tables with the benchmark's linear congruential
# generator. Lines are 60 characters, built one character at a time.
import sys

ALU = ("GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGG"
       "GAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGA"
       "CCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAAT"
       "ACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCA"
       "GCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGG"
       "AGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCC"
       "AGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA")

IUB = [["a", 0.27], ["c", 0.12], ["g", 0.12], ["t", 0.27],
       ["B", 0.02], ["D", 0.02], ["H", 0.02], ["K", 0.02],
       ["M", 0.02], ["N", 0.02], ["R", 0.02], ["S", 0.02],
       ["V", 0.02], ["W", 0.02], ["Y", 0.02]]

HOMO_SAPIENS = [["a", 0.3029549426680], ["c", 0.1979883004921],
                ["g", 0.1975473066391], ["t", 0.3015094502008]]

IM = 139968
IA = 3877
IC = 29573
last = 42


def random(mx):
    global last
    last = (last * IA + IC) % IM
    return mx * last / IM


def cumulative(table):
    total = 0.0
    out = []
    for c, p in table:
        total += p
        out.append([c, total])
    return out


def pick(table, r):
    for c, p in table:
        if r < p:
            return c
    return table[-1][0]


def repeat_fasta(header, src, n):
    print(header)
    s = src + src
    pos = 0
    for i in range(0, n, 60):
        m = min(60, n - i)
        print(s[pos:pos + m])
        pos += m
        if pos >= len(src):
            pos -= len(src)


def random_fasta(header, table, n):
    print(header)
    table = cumulative(table)
    for i in range(0, n, 60):
        m = min(60, n - i)
        line = ""
        for _ in range(m):
            line += pick(table, random(1.0))
        print(line)


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
repeat_fasta(">ONE Homo sapiens alu", ALU, 2 * n)
random_fasta(">TWO IUB ambiguity codes", IUB, 3 * n)
random_fasta(">THREE Homo sapiens frequency", HOMO_SAPIENS, 5 * n)
