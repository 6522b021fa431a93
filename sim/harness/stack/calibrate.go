package stack

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Calibration: what each tier costs, from short runs of the stack.
//
// The kernel counts every process's CPU time, whatever it waited for, so a
// tier's CPU time per request in a window is what its work costs, even on
// a machine where it waited for a CPU. Each tier does three kinds of work:
// per request, per connection it accepts, per connection it opens to the
// next tier. Over windows that open different numbers of connections per
// request (upstream keep-alive off and on, a Redis connection per request
// or a pool), a least-squares fit of CPU per request on the connections per
// request separates them:
//
//	cpu_per_request = server_time × calls + server_conn_time × accepted + client_conn_time × opened
//
// where calls is the requests the tier serves per load request (Redis: 2,
// SET and GET), accepted the connections it accepted per request (the hop
// into it), opened those it opened (the hop out of it). A kind of
// connection whose rate did not vary across the windows cannot be told
// apart from the work per request (Flask's server accepts one connection
// for every request whatever nginx does): its cost stays in server_time,
// and the calibration says so.

// Costs are a calibration's results, in milliseconds of CPU.
type Costs struct {
	// LoadCPU: the load generator's CPU per request.
	LoadCPU float64 `json:"load_cpu_ms"`
	// Tiers: each server tier's costs, by name (nginx, app, redis).
	Tiers map[string]*TierCosts `json:"tiers"`
	// Background: the other programs' share of the machine during the
	// windows, in CPUs (mean).
	Background float64 `json:"background_cpu"`
	// Windows: how many windows were fitted.
	Windows int      `json:"windows"`
	Notes   []string `json:"notes,omitempty"`
}

// TierCosts are one tier's costs.
type TierCosts struct {
	ServerTime     float64 `json:"server_time_ms"`
	ServerConnTime float64 `json:"server_conn_time_ms"`
	ClientConnTime float64 `json:"client_conn_time_ms"`
	// Residual: the root-mean-square difference between the fitted and
	// the measured CPU per request over the windows.
	Residual float64 `json:"residual_ms"`
}

// tierCalls are the requests each tier serves per request of the load.
var tierCalls = map[string]float64{"nginx": 1, "app": 1, "redis": 2}

// nextHop names the hop a tier opens connections over.
var nextHop = map[string]string{"nginx": "app", "app": "redis"}

// Calibrate fits each tier's costs over windows (measured results of the
// same stack and load in different variants).
func Calibrate(windows []*Result) (*Costs, error) {
	if len(windows) == 0 {
		return nil, fmt.Errorf("stack: calibration needs at least one window")
	}
	c := &Costs{Tiers: map[string]*TierCosts{}, Windows: len(windows)}
	for _, w := range windows {
		if w.Requests-w.Errors <= 0 {
			return nil, fmt.Errorf("stack: calibration window %q answered no request", w.Name)
		}
		c.LoadCPU += w.CPUPerRequestMS["load"] / float64(len(windows))
		c.Background += w.BackgroundCPU / float64(len(windows))
	}
	c.LoadCPU, c.Background = roundTo(c.LoadCPU, 4), roundTo(c.Background, 3)
	for _, tier := range []string{"nginx", "app", "redis"} {
		names := []string{"server_time", "server_conn_time", "client_conn_time"}
		var xs [][3]float64
		var ys []float64
		for _, w := range windows {
			ok := float64(w.Requests - w.Errors)
			x := [3]float64{tierCalls[tier], perRequest(w, tier, ok), 0}
			if next, has := nextHop[tier]; has {
				x[2] = perRequest(w, next, ok)
			}
			xs = append(xs, x)
			ys = append(ys, w.CPUPerRequestMS[tier])
		}
		coef, res, notes := fitCosts(xs, ys, names)
		for _, n := range notes {
			c.Notes = append(c.Notes, tier+": "+n)
		}
		c.Tiers[tier] = &TierCosts{ServerTime: roundTo(coef[0], 4), ServerConnTime: roundTo(coef[1], 4),
			ClientConnTime: roundTo(coef[2], 4), Residual: roundTo(res, 4)}
	}
	return c, nil
}

// perRequest is hop's connections opened per answered request, at least 0
// (a window's edges can make a count of nothing slightly negative).
func perRequest(w *Result, hop string, ok float64) float64 {
	for _, h := range w.Hops {
		if h.Name == hop {
			return max(0, float64(h.Connects)/ok)
		}
	}
	return 0
}

// fitCosts fits y ≈ Σ coef[i]·x[i] by least squares with coefficients of at
// least 0. Column 0 (the work per request) is always fitted; another column
// is left at 0 when its values are all near 0 (nothing of that kind
// happened) or nearly equal (it cannot be told apart from column 0), and
// the notes say which.
func fitCosts(xs [][3]float64, ys []float64, names []string) (coef [3]float64, rms float64, notes []string) {
	const nothing, spread = 0.02, 0.2
	use := []int{0}
	for j := 1; j < 3; j++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range xs {
			lo, hi = min(lo, x[j]), max(hi, x[j])
		}
		switch {
		case hi < nothing:
		case hi-lo < spread:
			notes = append(notes, fmt.Sprintf("%s not separable (%.2f–%.2f connections per request in every window): its cost is in server_time", names[j], lo, hi))
		case len(use) < len(xs):
			use = append(use, j)
		default:
			notes = append(notes, fmt.Sprintf("%s not fitted: too few windows", names[j]))
		}
	}
	for {
		sol, ok := leastSquares(xs, ys, use)
		if !ok && len(use) == 1 {
			notes = append(notes, "no work per request could be fitted")
			break
		}
		if !ok {
			notes = append(notes, fmt.Sprintf("%s not fitted: the windows do not separate them", strings.Join(colNames(names, use[1:]), ", ")))
			use = use[:1]
			continue
		}
		neg := -1
		for k, j := range use {
			if j != 0 && sol[k] < 0 && (neg < 0 || sol[k] < sol[neg]) {
				neg = k
			}
		}
		if neg < 0 {
			coef = [3]float64{}
			for k, j := range use {
				coef[j] = max(0, sol[k])
			}
			break
		}
		notes = append(notes, fmt.Sprintf("%s fitted below 0 (%.3f ms): left at 0", names[use[neg]], sol[neg]))
		use = slices.Delete(use, neg, neg+1)
	}
	for i, x := range xs {
		d := ys[i] - (coef[0]*x[0] + coef[1]*x[1] + coef[2]*x[2])
		rms += d * d
	}
	return coef, math.Sqrt(rms / float64(len(xs))), notes
}

func colNames(names []string, cols []int) []string {
	out := make([]string, len(cols))
	for i, j := range cols {
		out[i] = names[j]
	}
	return out
}

// leastSquares solves the normal equations for the columns cols of xs;
// false when they are singular.
func leastSquares(xs [][3]float64, ys []float64, cols []int) ([]float64, bool) {
	n := len(cols)
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n+1)
		for r, x := range xs {
			for j := range n {
				a[i][j] += x[cols[i]] * x[cols[j]]
			}
			a[i][n] += x[cols[i]] * ys[r]
		}
	}
	// Gaussian elimination with partial pivoting.
	for col := range n {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		if math.Abs(a[p][col]) < 1e-9 {
			return nil, false
		}
		a[col], a[p] = a[p], a[col]
		for r := range n {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for k := col; k <= n; k++ {
				a[r][k] -= f * a[col][k]
			}
		}
	}
	sol := make([]float64, n)
	for i := range n {
		sol[i] = a[i][n] / a[i][i]
	}
	return sol, true
}

func roundTo(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
