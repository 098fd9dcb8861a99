-- sudoku (plb2): solves n sudokus (the 20 hard ones, in turn) by exact cover with a
-- most-constrained-column heuristic. A row r = 81 i + 9 j + k (cell (i, j)
-- holds digit k + 1) covers four of the 324 columns (cell, box-digit,
-- row-digit, column-digit); sr counts how many chosen rows block each row,
-- sc how many rows are still free in each column (+128 once covered).
-- Rows and columns keep their 0-based numbers as table keys.
local HARD20 = {
    "..............3.85..1.2.......5.7.....4...1...9.......5......73..2.1........4...9",
    ".......12........3..23..4....18....5.6..7.8.......9.....85.....9...4.5..47...6...",
    ".2..5.7..4..1....68....3...2....8..3.4..2.5.....6...1...2.9.....9......57.4...9..",
    "........3..1..56...9..4..7......9.5.7.......8.5.4.2....8..2..9...35..1..6........",
    "12.3....435....1....4........54..2..6...7.........8.9...31..5.......9.7.....6...8",
    "1.......2.9.4...5...6...7...5.9.3.......7.......85..4.7.....6...3...9.8...2.....1",
    ".......39.....1..5..3.5.8....8.9...6.7...2...1..4.......9.8..5..2....6..4..7.....",
    "12.3.....4.....3....3.5......42..5......8...9.6...5.7...15..2......9..6......7..8",
    "..3..6.8....1..2......7...4..9..8.6..3..4...1.7.2.....3....5.....5...6..98.....5.",
    "1.......9..67...2..8....4......75.3...5..2....6.3......9....8..6...4...1..25...6.",
    "..9...4...7.3...2.8...6...71..8....6....1..7.....56...3....5..1.4.....9...2...7..",
    "....9..5..1.....3...23..7....45...7.8.....2.......64...9..1.....8..6......54....7",
    "4...3.......6..8..........1....5..9..8....6...7.2........1.27..5.3....4.9........",
    "7.8...3.....2.1...5.........4.....263...8.......1...9..9.6....4....7.5...........",
    "3.7.4...........918........4.....7.....16.......25..........38..9....5...2.6.....",
    "........8..3...4...9..2..6.....79.......612...6.5.2.7...8...5...1.....2.4.5.....3",
    ".......1.4.........2...........5.4.7..8...3....1.9....3..4..2...5.1........8.6...",
    ".......12....35......6...7.7.....3.....4..8..1...........12.....8.....4..5....6..",
    "1.......2.9.4...5...6...7...5.3.4.......6........58.4...2...6...3...9.8.7.......1",
    ".....1.2.3...4.5.....6....7..2.....1.8..9..3.4.....8..5....2....9..3.4....67.....",
}

local function genmat()
    local R, C = {}, {}
    for i = 0, 8 do
        for j = 0, 8 do
            for k = 0, 8 do
                C[81 * i + 9 * j + k] = { 9 * i + j, (i // 3 * 3 + j // 3) * 9 + k + 81,
                                          9 * i + k + 162, 9 * j + k + 243 }
            end
        end
    end
    for c = 0, 323 do R[c] = {} end
    for r = 0, 728 do
        for _, c in ipairs(C[r]) do
            local l = R[c]
            l[#l + 1] = r
        end
    end
    return R, C
end

local function update(R, C, sr, sc, r, v)
    local best, best_c = 10, 0
    local Cr = C[r]
    for c2 = 1, 4 do
        local c = Cr[c2]
        sc[c] = sc[c] + (v << 7)
    end
    for c2 = 1, 4 do
        local c = Cr[c2]
        local Rc = R[c]
        if v > 0 then
            for r2 = 1, 9 do
                local rr = Rc[r2]
                sr[rr] = sr[rr] + 1
                if sr[rr] == 1 then
                    local Crr = C[rr]
                    for c3 = 1, 4 do
                        local cc = Crr[c3]
                        sc[cc] = sc[cc] - 1
                        if sc[cc] < best then
                            best, best_c = sc[cc], cc
                        end
                    end
                end
            end
        else
            for r2 = 1, 9 do
                local rr = Rc[r2]
                sr[rr] = sr[rr] - 1
                if sr[rr] == 0 then
                    local Crr = C[rr]
                    for c3 = 1, 4 do
                        local cc = Crr[c3]
                        sc[cc] = sc[cc] + 1
                    end
                end
            end
        end
    end
    return best, best_c
end

local function solve(R, C, s)
    local sr, sc, cr, cc, out = {}, {}, {}, {}, {}
    for r = 0, 728 do sr[r] = 0 end
    for c = 0, 323 do sc[c] = 9 end
    for i = 0, 80 do cr[i] = -1; cc[i] = -1 end
    local hints = 0
    for i = 0, 80 do
        local b = string.byte(s, i + 1)
        local a = (b >= 49 and b <= 57) and b - 49 or -1
        if a >= 0 then
            update(R, C, sr, sc, i * 9 + a, 1)
            hints = hints + 1
        end
        out[i + 1] = a + 1
    end
    local solutions = {}
    local i, best, d = 0, 10, 1
    while true do
        while i >= 0 and i < 81 - hints do
            if d == 1 then
                if best > 1 then
                    for c = 0, 323 do
                        if sc[c] < best then
                            best, cc[i] = sc[c], c
                            if best < 2 then
                                break
                            end
                        end
                    end
                end
                if best == 0 or best == 10 then
                    cr[i], d = -1, -1
                    i = i - 1
                end
            end
            local c = cc[i]
            if d == -1 and cr[i] >= 0 then
                update(R, C, sr, sc, R[c][cr[i] + 1], -1)
            end
            local r2 = cr[i] + 1
            while r2 < 9 and sr[R[c][r2 + 1]] ~= 0 do
                r2 = r2 + 1
            end
            if r2 < 9 then
                best, cc[i + 1] = update(R, C, sr, sc, R[c][r2 + 1], 1)
                cr[i], d = r2, 1
                i = i + 1
            else
                cr[i], d = -1, -1
                i = i - 1
            end
        end
        if i < 0 then
            break
        end
        local y = {}
        for j = 1, 81 do y[j] = out[j] end
        for j = 0, i - 1 do
            local r = R[cc[j]][cr[j] + 1]
            y[r // 9 + 1] = r % 9 + 1
        end
        solutions[#solutions + 1] = y
        i = i - 1
        d = -1
    end
    return solutions
end

local n = math.tointeger(tonumber(arg and arg[1])) or 20
local R, C = genmat()
for i = 0, n - 1 do
    for _, y in ipairs(solve(R, C, HARD20[i % #HARD20 + 1])) do
        print(table.concat(y))
    end
    print()
end
