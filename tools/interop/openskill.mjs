// Rates one game with openskill.js (Plackett-Luce), the independent side of
// crucible's OpenSkill test:  node openskill.mjs '<json>'
//   json = {"teams": [[{mu, sigma}, ...], ...], "rank": [...], "beta": b, "tau": t}
import { rate } from "openskill";

const g = JSON.parse(process.argv[2]);
const options = { rank: g.rank, beta: g.beta };
if (g.tau) options.tau = g.tau;
process.stdout.write(JSON.stringify(rate(g.teams, options)));
