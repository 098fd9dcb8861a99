-- fasta (Benchmarks Game): writes three DNA sequences in FASTA format: a
-- repeat of the ALU sequence, then two random sequences drawn from
-- cumulative probability tables with the benchmark's linear congruential
-- generator. Lines are 60 characters, built one character at a time.
local ALU = "GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGG" ..
            "GAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGA" ..
            "CCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAAT" ..
            "ACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCA" ..
            "GCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGG" ..
            "AGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCC" ..
            "AGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA"

local IUB = { {"a", 0.27}, {"c", 0.12}, {"g", 0.12}, {"t", 0.27},
              {"B", 0.02}, {"D", 0.02}, {"H", 0.02}, {"K", 0.02},
              {"M", 0.02}, {"N", 0.02}, {"R", 0.02}, {"S", 0.02},
              {"V", 0.02}, {"W", 0.02}, {"Y", 0.02} }

local HOMO_SAPIENS = { {"a", 0.3029549426680}, {"c", 0.1979883004921},
                       {"g", 0.1975473066391}, {"t", 0.3015094502008} }

local IM = 139968
local IA = 3877
local IC = 29573
local last = 42

local function random(mx)
    last = (last * IA + IC) % IM
    return mx * last / IM
end

local function cumulative(table)
    local total = 0.0
    local out = {}
    for _, e in ipairs(table) do
        total = total + e[2]
        out[#out + 1] = { e[1], total }
    end
    return out
end

local function pick(table, r)
    for _, e in ipairs(table) do
        if r < e[2] then
            return e[1]
        end
    end
    return table[#table][1]
end

local function repeat_fasta(header, src, n)
    print(header)
    local s = src .. src
    local pos = 0
    for i = 0, n - 1, 60 do
        local m = math.min(60, n - i)
        print(string.sub(s, pos + 1, pos + m))
        pos = pos + m
        if pos >= #src then
            pos = pos - #src
        end
    end
end

local function random_fasta(header, table, n)
    print(header)
    table = cumulative(table)
    for i = 0, n - 1, 60 do
        local m = math.min(60, n - i)
        local line = ""
        for _ = 1, m do
            line = line .. pick(table, random(1.0))
        end
        print(line)
    end
end

local n = math.tointeger(tonumber(arg and arg[1])) or 1000
repeat_fasta(">ONE Homo sapiens alu", ALU, 2 * n)
random_fasta(">TWO IUB ambiguity codes", IUB, 3 * n)
random_fasta(">THREE Homo sapiens frequency", HOMO_SAPIENS, 5 * n)
