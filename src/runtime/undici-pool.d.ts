/** undici's Pool module on its own (its package index loads much more); its types are the package's. */
declare module 'undici/lib/dispatcher/pool.js' {
  import type {Pool} from 'undici'

  const PoolClass: typeof Pool
  export default PoolClass
}
